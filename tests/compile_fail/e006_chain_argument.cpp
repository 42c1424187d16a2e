// expect: tenon-E006
#include <tenon/tenon.hpp>
using namespace tenon;

auto model = chain(Relu<512, 784>(), 0.2, Softmax<10>());  // a dropout rate instead of Dropout(0.2)
