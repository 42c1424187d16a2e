// expect: tenon-E012
#include <tenon/tenon.hpp>
using namespace tenon;

auto layer = Linear<0, 5>();
