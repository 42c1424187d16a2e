// expect: tenon-E002
// A layer of Ints1d after one that produces Floats2d.
#include <tenon/tenon.hpp>
using namespace tenon;

auto model = Relu<512, 784>() >> noop<Ints1d>();
