// expect: tenon-E001
// The Fashion-MNIST MLP with the second layer's static nI wrong (784 instead of 512).
#include <tenon/tenon.hpp>
using namespace tenon;

auto model = Relu<512, 784>() >> Relu<512, 784>() >> Softmax<10>();
