// expect: tenon-E009
// model(X, is_train) is begin_update's twin and checks the same.
#include <tenon/tenon.hpp>
using namespace tenon;

int main() {
    auto model = Relu<512, 784>() >> Softmax<10>();
    model.initialize();
    Floats3d X({2, 28, 28});
    auto [Y, backprop] = model(X, true);
}
