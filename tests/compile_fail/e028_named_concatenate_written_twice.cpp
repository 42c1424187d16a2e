// expect: tenon-E028
// A named model type derived from a concatenate whose branches take different widths.
// Its layers are written twice (the base and the constructor): clang++ once took the second
// call for a deduction failure and added "no matching function" / "invalid operands" and one
// "no member named" per use (8 errors).
#include <tenon/tenon.hpp>
using namespace tenon;

struct Named : decltype(concatenate(Relu<4, 8>(), Relu<4, 5>())) {
    Named() : decltype(concatenate(Relu<4, 8>(), Relu<4, 5>()))(concatenate(Relu<4, 8>(), Relu<4, 5>())) {}
};
auto model = Named();
