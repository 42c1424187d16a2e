// expect: tenon-E025
// expect-text: produces_width<16>
// The residual gets 8 columns and its layer makes 16: the residual's mistake (E025), not a
// chain width (E001).
#include <tenon/tenon.hpp>
using namespace tenon;

auto model = Relu<8, 4>() >> residual(Relu<16>()) >> Softmax<3>();
