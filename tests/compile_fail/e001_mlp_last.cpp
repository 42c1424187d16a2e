// expect: tenon-E001
// The Fashion-MNIST MLP (784-512-512-10) with the Softmax's nI wrong.
#include <tenon/tenon.hpp>
using namespace tenon;

auto model = Relu<512, 784>() >> Relu<512>() >> Softmax<10, 256>();
