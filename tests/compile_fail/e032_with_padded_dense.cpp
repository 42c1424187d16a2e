// expect: tenon-E032
// expect-text: inner_input<tenon::check::Floats2d>
// with_padded over a dense layer (Floats2d -> Floats2d): wrap it in with_array<Padded> instead.
#include <tenon/layers/linear.hpp>
#include <tenon/layers/relu.hpp>
#include <tenon/transfers/with_array2d.hpp>
#include <tenon/transfers/with_padded.hpp>
#include <tenon/transfers/with_ragged.hpp>
#include <tenon/transfers/with_list.hpp>
#include <tenon/transfers/with_flatten.hpp>
#include <tenon/transfers/list2padded.hpp>
using namespace tenon;

auto model = with_padded<Padded>(Relu<4>());
