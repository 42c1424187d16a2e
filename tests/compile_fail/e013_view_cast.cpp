// expect: tenon-E013
#include <tenon/tenon.hpp>
using namespace tenon;

int main() {
    Array<float, dyn, 4> a({2, 4});
    auto v = static_cast<ArrayView<const float, dyn, 5>>(a);
}
