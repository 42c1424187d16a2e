// expect: tenon-E044
// expect-text: Ints2d
// floats_getitem over integer ids: ints_getitem (or array_getitem) takes them.
#include <tenon/tenon.hpp>
using namespace tenon;

auto model = floats_getitem<Ints2d>(Slice(), 0);
