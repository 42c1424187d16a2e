// expect: tenon-E001
// LayerNorm<> takes the width it receives and passes it on.
#include <tenon/tenon.hpp>
using namespace tenon;

auto model = Relu<512, 784>() >> LayerNorm<>() >> Softmax<10, 256>();
