// expect: tenon-E045
// expect-text: element<2>
// A pair has elements 0 and 1.
#include <tenon/tenon.hpp>
using namespace tenon;

auto model = with_getitem<2, std::pair<Floats2d, Floats2d>>(Relu<4>());
