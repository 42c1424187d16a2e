// expect: tenon-E016
// clone of a 784 -> 512 layer: the second copy would need nI 512.
#include <tenon/tenon.hpp>
using namespace tenon;

auto model = clone(Relu<512, 784>(), 2);
