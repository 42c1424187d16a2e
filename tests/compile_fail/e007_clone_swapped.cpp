// expect: tenon-E007
// clone(n, layer): Thinc's order is clone(orig, n).
#include <tenon/tenon.hpp>
using namespace tenon;

auto model = clone(2, Relu<512, 512>());
