// expect: tenon-E014
// The batch size comes first.
#include <tenon/tenon.hpp>
using namespace tenon;

int main() {
    Floats2d X({100, 784});
    Floats2d Y({100, 10});
    for (auto [x, y] : multibatch(X, Y)) (void)x, (void)y;
}
