// expect: tenon-E014
// expect-text: vector
#include <vector>

#include <tenon/tenon.hpp>
using namespace tenon;

int main() {
    Floats2d X({100, 784});
    std::vector<int> labels(100);
    for (auto [x, y] : multibatch(128, X, labels, shuffle)) (void)x, (void)y;
}
