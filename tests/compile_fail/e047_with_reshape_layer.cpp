// expect: tenon-E047
// expect-text: Strings
// with_reshape needs a Floats2d -> Floats2d layer; strings2arrays maps strings to ids.
#include <tenon/tenon.hpp>
using namespace tenon;

auto model = with_reshape(strings2arrays());
