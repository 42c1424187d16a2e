// expect: tenon-E002
// expect-text: expects_type<tenon::check::List<tenon::check::Floats2d>
// expect-text: produces_type<tenon::check::Ragged>
// max-lines: 18
// A wrapper for lists after a layer that outputs Ragged: the kinds must match in a chain.
#include <tenon/combinators/chain.hpp>
#include <tenon/layers/relu.hpp>
#include <tenon/transfers/list2ragged.hpp>
#include <tenon/transfers/with_array.hpp>
using namespace tenon;

auto model = list2ragged() >> with_array<List<Floats2d>>(Relu<4>());
