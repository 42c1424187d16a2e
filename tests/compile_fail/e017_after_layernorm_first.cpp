// expect: tenon-E017
// LayerNorm<>() takes its width from its input and knows none; the Relu after it fixes 4, so
// the model's input width is 4 (widths::backward_width), and an array whose type fixes 5 is a
// compile error, through `>>` and Dropout as well.
#include <tenon/tenon.hpp>
using namespace tenon;

int main() {
    auto model = LayerNorm<>() >> Dropout(0.1) >> Relu<8, 4>() >> Softmax<3>();
    model.initialize();
    Array<float, dyn, 5> X({4, 5});
    Ints1d labels({4}, {0, 1, 2, 1});
    Optimizer opt = Adam(0.001);
    auto [Yh, backprop] = model.begin_update(X);
    backprop(CategoricalCrossentropy().get_grad(Yh, labels));
    model.finish_update(opt);
    Floats2d P = model.predict(X);
    return int(P.shape(0));
}
