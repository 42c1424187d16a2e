// expect: tenon-E013
#include <tenon/tenon.hpp>
using namespace tenon;

int main() {
    Array<float, dyn, 784> images({2, 784});
    Array<float, dyn, 28> rows(images.view());
}
