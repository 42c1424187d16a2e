// expect: tenon-E001
// A named model type derived from a chain whose widths differ (8 into 5).
// Its layers are written twice (the base and the constructor): clang++ once took the second
// call for a deduction failure and added "no matching function" / "invalid operands" and one
// "no member named" per use (8 errors).
#include <tenon/tenon.hpp>
using namespace tenon;

struct Named : decltype(Relu<8, 4>() >> Relu<8, 5>() >> Softmax<3>()) {
    Named() : decltype(Relu<8, 4>() >> Relu<8, 5>() >> Softmax<3>())(Relu<8, 4>() >> Relu<8, 5>() >> Softmax<3>()) {}
};
auto model = Named();
