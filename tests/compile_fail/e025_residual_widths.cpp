// expect: tenon-E025
// expect-text: produces_width<4>
// residual of a 3 -> 4 layer: X (width 3) and layer(X) (width 4) cannot be summed.
#include <tenon/tenon.hpp>
using namespace tenon;

auto model = residual(Relu<4, 3>());
