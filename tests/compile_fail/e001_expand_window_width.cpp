// expect: tenon-E001
// expect-text: expects_width<24>
// A static window and input width give expand_window a static output width (3 * 4 = 12):
// a layer after it that expects another width fails at compile time.
#include <tenon/tenon.hpp>
using namespace tenon;

auto model = Relu<4, 3>() >> expand_window<1>() >> Relu<2, 24>();
