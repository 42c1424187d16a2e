// expect: tenon-E049
// expect-text: with_reshape_
// The layer to reshape around, not its width.
#include <tenon/tenon.hpp>
using namespace tenon;

int main() {
    auto m = with_reshape(4);
}
