// expect: tenon-E012
// expect-text: nO
#include <tenon/tenon.hpp>
using namespace tenon;

auto layer = Relu<0>();
