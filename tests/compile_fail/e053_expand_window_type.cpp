// expect: tenon-E053
// expect-text: Padded
// expand_window works on Floats2d or Ragged; a Padded batch goes through with_array.
#include <tenon/tenon.hpp>
using namespace tenon;

auto model = expand_window<Padded>(1);
