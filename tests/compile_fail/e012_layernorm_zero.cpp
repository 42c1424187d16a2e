// expect: tenon-E012
#include <tenon/tenon.hpp>
using namespace tenon;

auto layer = LayerNorm<0>();
