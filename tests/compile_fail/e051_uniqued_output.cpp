// expect: tenon-E051
// expect-text: Ints2d
// uniqued() copies the layer's output rows: the layer must output Floats2d.
#include <tenon/tenon.hpp>
using namespace tenon;

auto model = uniqued(noop<Ints2d>());
