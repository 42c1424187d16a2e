// expect: tenon-E031
// expect-text: inner_input<tenon::check::Padded>
// with_array2d over a layer on Padded, not on 2d arrays.
#include <tenon/layers/linear.hpp>
#include <tenon/layers/relu.hpp>
#include <tenon/transfers/with_array2d.hpp>
#include <tenon/transfers/with_padded.hpp>
#include <tenon/transfers/with_ragged.hpp>
#include <tenon/transfers/with_list.hpp>
#include <tenon/transfers/with_flatten.hpp>
#include <tenon/transfers/list2padded.hpp>
using namespace tenon;

auto model = with_array2d<Padded>(with_array<Padded>(Relu<4>()));
