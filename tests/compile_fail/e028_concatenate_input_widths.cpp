// expect: tenon-E028
// expect-text: expects_width<6>
// Both layers get the same input: they cannot expect widths 3 and 6.
#include <tenon/tenon.hpp>
using namespace tenon;

auto model = Relu<4, 3>() | Relu<5, 6>();
