// expect: tenon-E037
// expect-text: accepts<tenon::check::Floats2d
// with_array(layer) without the input kind: with_array<Ragged>(layer), with_array<List<Floats2d>>(layer), ...
#include <tenon/layers/linear.hpp>
#include <tenon/layers/relu.hpp>
#include <tenon/transfers/with_array2d.hpp>
#include <tenon/transfers/with_padded.hpp>
#include <tenon/transfers/with_ragged.hpp>
#include <tenon/transfers/with_list.hpp>
#include <tenon/transfers/with_flatten.hpp>
#include <tenon/transfers/list2padded.hpp>
using namespace tenon;

auto model = with_array(Relu<4>());
