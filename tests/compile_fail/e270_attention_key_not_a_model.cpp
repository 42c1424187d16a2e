// expect: tenon-E270
// expect-text: not_a_model
// A key transform that is not a model.
#include <tenon/tenon.hpp>
using namespace tenon;

auto model = ParametricAttention_v2<16>(std::string("linear"));
