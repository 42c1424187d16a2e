// expect: tenon-E270
// expect-text: given_type<tenon::check::Ragged>
// A key transform that takes Ragged: the keys are computed from the input's rows (a Floats2d).
#include <tenon/tenon.hpp>
using namespace tenon;

auto model = ParametricAttention_v2(with_array<Ragged>(Linear<16, 16>()));
