// expect: tenon-E046
// expect-text: Ints1d
// Element 1 of the tuple holds Ints1d; Relu takes Floats2d (element 0 is the one to pick).
#include <tenon/tenon.hpp>
using namespace tenon;

auto model = with_getitem<1, std::tuple<Floats2d, Ints1d>>(Relu<4>());
