// expect: tenon-E027
// expect-text: siamese_widths
// The similarity reads the layer's outputs: a 64-wide Relu's outputs are not CauchySimilarity<32>'s.
#include <tenon/tenon.hpp>
using namespace tenon;

auto model = siamese(Relu<64, 32>(), CauchySimilarity<32>());

int use_it() {
    Floats2d A({4, 32}), B({4, 32});
    model.initialize({A, B});
    auto [Y, backprop] = model.begin_update({A, B});
    auto P = model.predict({A, B});
    return 0;
}
