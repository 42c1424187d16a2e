// expect: tenon-E036
// expect-text: given_type<tenon::check::Ints1d>
// expect-text: accepts<tenon::check::Floats2d, tenon::check::List<tenon::check::Floats2d>, tenon::check::Ragged, tenon::check::Padded>
// with_array<Ints1d> over a layer on Floats2d: Ints1d is not a kind of Floats2d data.
#include <tenon/layers/linear.hpp>
#include <tenon/layers/relu.hpp>
#include <tenon/transfers/with_array2d.hpp>
#include <tenon/transfers/with_padded.hpp>
#include <tenon/transfers/with_ragged.hpp>
#include <tenon/transfers/with_list.hpp>
#include <tenon/transfers/with_flatten.hpp>
#include <tenon/transfers/list2padded.hpp>
using namespace tenon;

auto model = with_array<Ints1d>(Relu<4>());
