// expect: tenon-E001
// expect-text: expects_width<5>
// with_reshape has its layer's widths: chain checks them through it (6 meets 5).
#include <tenon/tenon.hpp>
using namespace tenon;

auto model = with_reshape(Relu<6, 4>()) >> with_reshape(Relu<2, 5>());
