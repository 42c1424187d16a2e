// expect: tenon-E002
// expect-text: Ragged
// A reduction after a layer that outputs Floats2d: the lengths of the sequences are lost.
#include <tenon/tenon.hpp>
using namespace tenon;

auto model = Relu<8, 4>() >> reduce_sum();
