// expect: tenon-E030
// expect-text: inner_input<tenon::check::Ragged>
// with_array over a layer that takes Ragged, not an array.
#include <tenon/layers/linear.hpp>
#include <tenon/layers/relu.hpp>
#include <tenon/transfers/with_array2d.hpp>
#include <tenon/transfers/with_padded.hpp>
#include <tenon/transfers/with_ragged.hpp>
#include <tenon/transfers/with_list.hpp>
#include <tenon/transfers/with_flatten.hpp>
#include <tenon/transfers/list2padded.hpp>
using namespace tenon;

auto model = with_array<Ragged>(with_array<Ragged>(Relu<4>()));
