// expect: tenon-E009
#include <tenon/tenon.hpp>
using namespace tenon;

int main() {
    auto model = Relu<512, 784>() >> Softmax<10>();
    model.initialize();
    Ints2d X({2, 784});
    auto [Y, backprop] = model.begin_update(X);
}
