// expect: tenon-E021
// expect-text: produces_width<5>
// The outputs of add are summed: widths 4 and 5 cannot be.
#include <tenon/tenon.hpp>
using namespace tenon;

auto model = add(Relu<4>(), Linear<4>(), Relu<5>());
