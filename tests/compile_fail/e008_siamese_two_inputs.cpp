// expect: tenon-E008
// expect-text: given_arguments
// Thinc's siamese takes the pair as one input; predict(A, B) passes two.
#include <tenon/tenon.hpp>
using namespace tenon;

int main() {
    auto model = siamese(Relu<4, 6>(), CauchySimilarity<4>());
    Floats2d A({3, 6}), B({3, 6});
    model.initialize();
    Floats1d d = model.predict(A, B);
    auto [s, backprop] = model.begin_update({A, B});
    backprop(s);
    return int(d.size());
}
