// expect: tenon-E025
// clone(residual(Relu<96>()), 2) after a 64-wide layer: the residual's mistake (E025), as
// for a residual directly in the chain, looked for through the clone.
// expect-text: produces_width<96>
#include <tenon/tenon.hpp>
using namespace tenon;

int main() {
    auto model = Relu<64, 4>() >> clone(residual(Relu<96>()), 2) >> Softmax<3>();
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
