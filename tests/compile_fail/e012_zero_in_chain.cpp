// expect: tenon-E012
// A zero width inside a chain: E012 for the layer, no second error for the chain.
#include <tenon/tenon.hpp>
using namespace tenon;

auto model = Relu<512, 784>({.normalize = true}) >> Mish<0>() >> Softmax<10>();
