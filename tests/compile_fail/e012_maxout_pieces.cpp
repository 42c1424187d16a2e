// expect: tenon-E012
// expect-text: nP
#include <tenon/tenon.hpp>
using namespace tenon;

auto layer = Maxout<10, 5, 0>();
