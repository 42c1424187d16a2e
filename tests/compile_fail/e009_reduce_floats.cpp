// expect: tenon-E009
// expect-text: Ragged
// A reduction takes a Ragged batch (data + lengths), not the Floats2d of its rows.
#include <tenon/tenon.hpp>
using namespace tenon;

int main() {
    auto model = reduce_max();
    auto [Y, backprop] = model.begin_update(Floats2d({3, 4}));
}
