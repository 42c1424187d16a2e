// expect: tenon-E008
// expect-text: Ragged
// A reduction takes a Ragged batch (data + lengths), not the Floats2d of its rows.
#include <tenon/tenon.hpp>
using namespace tenon;

int main() {
    auto model = reduce_mean();
    auto Y = model.predict(Floats2d({3, 4}));
}
