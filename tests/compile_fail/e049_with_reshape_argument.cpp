// expect: tenon-E049
// The check lives in include/tenon/transfers/layer_argument.hpp (check::transfer_layer_argument).
// expect-text: transfer_layer_argument
// expect-text: with_reshape_
// The layer to reshape around, not its width.
#include <tenon/tenon.hpp>
using namespace tenon;

auto model = with_reshape(4);
