// expect: tenon-E043
// expect-text: argument<1>
// A floating-point number is no index entry.
#include <tenon/tenon.hpp>
using namespace tenon;

int main() {
    auto g = floats_getitem(Slice(), 1.5);
}
