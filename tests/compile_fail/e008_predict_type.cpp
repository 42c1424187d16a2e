// expect: tenon-E008
// expect-text: Ints1d
#include <tenon/tenon.hpp>
using namespace tenon;

int main() {
    auto model = Relu<512, 784>() >> Relu<512>() >> Softmax<10>();
    model.initialize();
    Ints1d labels({2});
    Floats2d P = model.predict(labels);
}
