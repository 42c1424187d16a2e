// expect: tenon-E049
// expect-text: with_debug_
// with_debug wraps a model.
#include <tenon/tenon.hpp>
using namespace tenon;

int main() {
    auto m = with_debug(0.5);
}
