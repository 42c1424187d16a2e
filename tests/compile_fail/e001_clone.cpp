// expect: tenon-E001
// clone(layer, n) keeps the layer's static widths.
#include <tenon/tenon.hpp>
using namespace tenon;

auto model = Relu<512, 784>() >> clone(Relu<512, 512>(), 2) >> Softmax<10, 256>();
