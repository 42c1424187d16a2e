// expect: tenon-E012
// expect-text: width_below_1
// A negative width (widths are signed so that dyn prints as -1; any other negative number is
// a mistake): E012 for the layer, no second error for the chain or its use.
#include <tenon/tenon.hpp>
using namespace tenon;

auto model = Relu<512, 784>() >> Relu<-5>() >> Softmax<10>();
