// expect: tenon-E001
// expect-text: the pieces are the third
// Maxout<64, 3> is nO = 64, nI = 3: the pieces are the third argument.
#include <tenon/tenon.hpp>
using namespace tenon;

auto model = Relu<96, 32>() >> Maxout<64, 3>() >> Softmax<10>();
