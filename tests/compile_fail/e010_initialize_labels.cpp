// expect: tenon-E010
// initialize(X, Y) takes Y of the model's output type: one-hot rows, not integer labels.
#include <tenon/tenon.hpp>
using namespace tenon;

int main() {
    auto model = Relu<512>() >> Softmax<>();
    Floats2d X({2, 784});
    Ints1d labels({2});
    model.initialize(X, labels);  // to_categorical(labels, 10) is meant
}
