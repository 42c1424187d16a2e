// expect: tenon-E001
// The same mismatch written with chain(...) instead of >>.
#include <tenon/tenon.hpp>
using namespace tenon;

auto model = chain(Relu<512, 784>(), Relu<512>(), Softmax<10, 256>());
