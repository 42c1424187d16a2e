// expect: tenon-E017
// expect-text: given_width<5>
// An array whose type fixes its width (5) given to a model whose type fixes another (4).
#include <tenon/tenon.hpp>
using namespace tenon;

int main() {
    auto model = Relu<8, 4>() >> Softmax<3>();
    model.initialize();
    Array<float, dyn, 5> X({2, 5});
    Floats2d P = model.predict(X);
    return int(P.shape(0));
}
