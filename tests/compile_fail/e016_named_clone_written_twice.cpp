// expect: tenon-E016
// A named model type derived from a clone of a layer that changes the width.
// Its layers are written twice (the base and the constructor): clang++ once took the second
// call for a deduction failure and added "no matching function" / "invalid operands" and one
// "no member named" per use (8 errors).
#include <tenon/tenon.hpp>
using namespace tenon;

struct Named : decltype(clone(Relu<4, 8>(), 2)) {
    Named() : decltype(clone(Relu<4, 8>(), 2))(clone(Relu<4, 8>(), 2)) {}
};
auto model = Named();
