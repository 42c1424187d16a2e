// expect: tenon-E044
// expect-text: array_getitem_
// array_getitem names its input type: array_getitem<Floats2d>(...).
#include <tenon/tenon.hpp>
using namespace tenon;

int main() {
    auto g = array_getitem(Slice(), 0);
}
