// expect: tenon-E005
// A number where a layer was meant (Relu<10>() was intended).
#include <tenon/tenon.hpp>
using namespace tenon;

auto model = Relu<512, 784>() >> 10;
