// expect: tenon-E029
// a | 3: the right operand is not a model.
#include <tenon/tenon.hpp>
using namespace tenon;

auto model = Relu<4>() | 3;
