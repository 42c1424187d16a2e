// expect: tenon-E020
// expect-text: add_types
// add of a Floats2d layer and a Ragged noop: the layers do not take the same input.
#include <tenon/tenon.hpp>
using namespace tenon;

auto model = Relu<4>() + noop<Ragged>();
