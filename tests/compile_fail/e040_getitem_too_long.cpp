// expect: tenon-E040
// expect-text: array_rank<2>
// A Floats2d has two axes; a third index entry needs a Floats3d input.
#include <tenon/tenon.hpp>
using namespace tenon;

auto model = floats_getitem<Floats2d>(Slice(), 0, 1);
