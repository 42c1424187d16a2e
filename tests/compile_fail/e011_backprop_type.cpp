// expect: tenon-E011
// backprop takes the gradient of the output (Floats2d), not the labels.
#include <tenon/tenon.hpp>
using namespace tenon;

int main() {
    auto model = Relu<512, 784>() >> Softmax<10>();
    model.initialize();
    Floats2d X({2, 784});
    Ints1d labels({2});
    auto [Y, backprop] = model.begin_update(X);
    auto dX = backprop(labels);
}
