// expect: tenon-E001
// expect-text: expects_width<9>
// relu|relu outputs 4 + 6 = 10 features; the Softmax after it expects 9.
#include <tenon/tenon.hpp>
using namespace tenon;

auto model = Relu<8>() >> (Relu<4>() | Relu<6>()) >> Softmax<3, 9>();
