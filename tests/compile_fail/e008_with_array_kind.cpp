// expect: tenon-E008
// expect-text: Ragged
// with_array<Ragged>(layer) takes Ragged: a Floats2d (e.g. the output of a reduction) is the wrong kind.
#include <tenon/layers/linear.hpp>
#include <tenon/layers/relu.hpp>
#include <tenon/transfers/with_array2d.hpp>
#include <tenon/transfers/with_padded.hpp>
#include <tenon/transfers/with_ragged.hpp>
#include <tenon/transfers/with_list.hpp>
#include <tenon/transfers/with_flatten.hpp>
#include <tenon/transfers/list2padded.hpp>
using namespace tenon;

int main() {
    auto model = with_array<Ragged>(Relu<4, 2>());
    model.initialize();
    auto Y = model.predict(Floats2d({3, 2}));
}
