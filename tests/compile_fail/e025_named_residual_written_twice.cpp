// expect: tenon-E025
// A named model type derived from a residual around a layer that changes the width.
// Its layers are written twice (the base and the constructor): clang++ once took the second
// call for a deduction failure and added "no matching function" / "invalid operands" and one
// "no member named" per use (8 errors).
#include <tenon/tenon.hpp>
using namespace tenon;

struct Named : decltype(residual(Relu<4, 8>())) {
    Named() : decltype(residual(Relu<4, 8>()))(residual(Relu<4, 8>())) {}
};
auto model = Named();
