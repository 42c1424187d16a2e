// expect: tenon-E005
// expect-text: Floats2d
// Data on the left of >>: >> builds models; it does not feed data to them (use predict).
#include <tenon/tenon.hpp>
using namespace tenon;

Floats2d X({2, 784});
auto model = X >> Relu<512, 784>();
