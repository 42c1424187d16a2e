// expect: tenon-E050
// expect-text: Floats2d
// uniqued() caches a layer's rows by an integer key: the layer must take Ints2d (or Keys2d).
#include <tenon/tenon.hpp>
using namespace tenon;

auto model = uniqued(Relu<8, 4>());
