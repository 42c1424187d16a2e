// expect: tenon-E271
// expect-text: expects_width<64>
// expect-text: produces_width<32>
// The keys must be as wide as Q (nO = 64): this key transform makes 32 columns.
#include <tenon/tenon.hpp>
using namespace tenon;

auto model = ParametricAttention_v2<64>(Linear<32, 64>());
