// expect: tenon-E004
#include <tenon/tenon.hpp>
using namespace tenon;

auto model = chain();
