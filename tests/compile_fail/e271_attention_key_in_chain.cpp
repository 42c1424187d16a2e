// expect: tenon-E271
// expect-text: given_width<8>
// A key transform that maps 8 columns to 16 cannot give keys for rows of width 16 (nor 8).
#include <tenon/tenon.hpp>
using namespace tenon;

auto model = list2ragged() >> with_array<Ragged>(Relu<16>()) >> ParametricAttention_v2(Linear<16, 8>()) >>
             reduce_sum() >> Softmax<4>();
