// expect: tenon-E027
// expect-text: siamese_types
// The similarity must take the pair of the layer's outputs; a Relu takes one array.
#include <tenon/tenon.hpp>
using namespace tenon;

auto model = siamese(Relu<4>(), Relu<1>());
