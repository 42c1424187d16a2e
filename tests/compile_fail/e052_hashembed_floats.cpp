// expect: tenon-E052
// expect-text: Floats2d
// The embedding layers take integer ids, not floats.
#include <tenon/tenon.hpp>
using namespace tenon;

auto model = HashEmbed<8, Floats2d>(100);
