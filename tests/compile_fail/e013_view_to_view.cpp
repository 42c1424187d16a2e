// expect: tenon-E013
#include <tenon/tenon.hpp>
using namespace tenon;

int main() {
    Array<float, dyn, 4> a({2, 4});
    ArrayView<float, dyn, 4> v = a;
    ArrayView<float, dyn, 5> w(v);
}
