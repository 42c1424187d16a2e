// expect: tenon-E001
// Relu<512>() gets nI = 784 from the layer before it; its output (512) then meets a layer
// whose static nI is 784.
#include <tenon/tenon.hpp>
using namespace tenon;

auto model = Relu<784, 100>() >> Relu<512>() >> Relu<10, 784>();
