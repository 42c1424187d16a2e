// expect: tenon-E001
// A deeper MLP (784-512-512-512-10): the mismatch is reported for the first bad layer only.
#include <tenon/tenon.hpp>
using namespace tenon;

auto model = Relu<512, 784>() >> Relu<512>() >> Relu<512, 500>() >> Softmax<10, 500>();
