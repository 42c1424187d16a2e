// expect: tenon-E041
// An integer on both axes of a Floats2d would give a scalar.
#include <tenon/tenon.hpp>
using namespace tenon;

int main() {
    auto g = floats_getitem(1, 2);
}
