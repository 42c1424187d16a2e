// expect: tenon-E001
// Nested chains are flattened before the check: chain(chain(a, b), c).
#include <tenon/tenon.hpp>
using namespace tenon;

auto model = chain(chain(Relu<512, 784>(), Relu<512>()), Softmax<10, 256>());
