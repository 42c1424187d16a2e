// expect: tenon-E001
// Widths pass through width-preserving layers: the 512 of layer 0 reaches layer 2.
#include <tenon/tenon.hpp>
using namespace tenon;

auto model = Relu<512, 784>() >> Dropout(0.2) >> Relu<10, 256>();
