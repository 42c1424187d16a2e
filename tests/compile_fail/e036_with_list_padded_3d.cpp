// expect: tenon-E036
// expect-text: given_type<tenon::check::Floats3d>
// with_list takes lists, Ragged or Padded, not a bare Floats3d (with_padded does).
#include <tenon/layers/linear.hpp>
#include <tenon/layers/relu.hpp>
#include <tenon/transfers/with_array2d.hpp>
#include <tenon/transfers/with_padded.hpp>
#include <tenon/transfers/with_ragged.hpp>
#include <tenon/transfers/with_list.hpp>
#include <tenon/transfers/with_flatten.hpp>
#include <tenon/transfers/list2padded.hpp>
using namespace tenon;

auto model = with_list<Floats3d>(with_array<List<Floats2d>>(Linear<3>()));
