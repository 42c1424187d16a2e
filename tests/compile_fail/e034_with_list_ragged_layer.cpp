// expect: tenon-E034
// expect-text: inner_output<tenon::check::Ragged>
// with_list over a layer on Ragged.
#include <tenon/layers/linear.hpp>
#include <tenon/layers/relu.hpp>
#include <tenon/transfers/with_array2d.hpp>
#include <tenon/transfers/with_padded.hpp>
#include <tenon/transfers/with_ragged.hpp>
#include <tenon/transfers/with_list.hpp>
#include <tenon/transfers/with_flatten.hpp>
#include <tenon/transfers/list2padded.hpp>
using namespace tenon;

auto model = with_list<Ragged>(with_array<Ragged>(Linear<3>()));
