// expect: tenon-E001
// The Fashion-MNIST MLP with a hidden width changed (256) but the Softmax still at nI 512.
#include <tenon/tenon.hpp>
using namespace tenon;

auto model = Relu<512, 784>() >> Relu<256>() >> Softmax<10, 512>();
