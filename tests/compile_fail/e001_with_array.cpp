// expect: tenon-E001
// expect-text: expects_width<256>
// expect-text: produces_width<512>
// with_array gives the layer's static widths to chain: 512 meets 256.
#include <tenon/combinators/chain.hpp>
#include <tenon/layers/relu.hpp>
#include <tenon/transfers/with_array.hpp>
using namespace tenon;

auto model = with_array<Floats2d>(Relu<512>()) >> Relu<10, 256>();
