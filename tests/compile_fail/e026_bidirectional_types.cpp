// expect: tenon-E026
// expect-text: bidirectional_types
// bidirectional runs on Padded sequences; Relu maps Floats2d.
#include <tenon/tenon.hpp>
using namespace tenon;

auto model = bidirectional(Relu<4>());
