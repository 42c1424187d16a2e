// expect: tenon-E001
// (noop() | Relu<4>()) after an 8-wide layer is 8 + 4 = 12 wide (a branch that keeps its width
// gives the input's: Concatenate::nO_per_nI); the next layer says nI 8.
// expect-text: produces_width<12>
#include <tenon/tenon.hpp>
using namespace tenon;

int main() {
    auto model = Relu<8, 4>() >> (noop() | Relu<4>()) >> Relu<16, 8>() >> Softmax<3>();
    Floats2d X({8, 4});
    Ints1d y({8}, {0, 1, 2, 0, 1, 2, 0, 1});
    Floats2d Y = to_categorical(y, 3);
    model.initialize(X, Y);
    Optimizer opt = Adam(0.001);
    CategoricalCrossentropy loss;
    for (int epoch = 0; epoch < 2; ++epoch) {
        for (auto [Xb, Yb] : multibatch(4, X, Y, shuffle)) {
            auto [Yh, backprop] = model.begin_update(Xb);
            backprop(loss.get_grad(Yh, Yb));
            model.finish_update(opt);
        }
    }
    Floats2d P = model.predict(X);
    return int(P.shape(0));
}
