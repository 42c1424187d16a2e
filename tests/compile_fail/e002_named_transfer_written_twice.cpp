// expect: tenon-E002
// A named model type derived from a chain that gives a Ragged to a layer of arrays.
// Its layers are written twice (the base and the constructor): clang++ once took the second
// call for a deduction failure and added "no matching function" / "invalid operands" and one
// "no member named" per use (8 errors).
#include <tenon/tenon.hpp>
using namespace tenon;

struct Named : decltype(list2ragged() >> Relu<4>()) {
    Named() : decltype(list2ragged() >> Relu<4>())(list2ragged() >> Relu<4>()) {}
};
auto model = Named();
