// expect: tenon-E022
// expect-text: concatenate_types
// concatenate of a Floats2d layer and a Padded noop: a wrong kind of input for one of them.
#include <tenon/tenon.hpp>
using namespace tenon;

auto model = Relu<4>() | noop<Padded>();
