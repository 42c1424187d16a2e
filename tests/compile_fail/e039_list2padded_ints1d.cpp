// expect: tenon-E039
// expect-text: given_type<tenon::check::Ints1d>
// list2padded converts lists of 2d arrays (one (length, width) array per sequence).
#include <tenon/layers/linear.hpp>
#include <tenon/layers/relu.hpp>
#include <tenon/transfers/with_array2d.hpp>
#include <tenon/transfers/with_padded.hpp>
#include <tenon/transfers/with_ragged.hpp>
#include <tenon/transfers/with_list.hpp>
#include <tenon/transfers/with_flatten.hpp>
#include <tenon/transfers/list2padded.hpp>
using namespace tenon;

auto model = list2padded<Ints1d>();
