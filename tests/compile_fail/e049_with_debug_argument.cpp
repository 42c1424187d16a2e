// expect: tenon-E049
// The check lives in include/tenon/transfers/layer_argument.hpp (check::transfer_layer_argument).
// expect-text: transfer_layer_argument
// expect-text: with_debug_
// with_debug wraps a model.
#include <tenon/tenon.hpp>
using namespace tenon;

auto model = with_debug(0.5);
