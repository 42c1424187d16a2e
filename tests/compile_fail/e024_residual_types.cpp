// expect: tenon-E024
// expect-text: residual_types
// residual needs Y = X + layer(X): a pair of arrays in, Floats1d out cannot be summed.
#include <tenon/tenon.hpp>
using namespace tenon;

auto model = residual(CauchySimilarity<4>());
