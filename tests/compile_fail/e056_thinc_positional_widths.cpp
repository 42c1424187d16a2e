// expect: tenon-E056
// expect-text: Relu
// Relu(64, 20) as in Thinc, where tenon takes the widths as template arguments, then the model
// trained and used: the one error.
#include <tenon/tenon.hpp>
using namespace tenon;

int main() {
    Floats2d X({100, 20});
    Floats2d Y = to_categorical(Ints1d({100}), 3);
    auto model = Relu<>(64, 20) >> Softmax<3>();
    model.initialize(X, Y);
    Optimizer opt = Adam(0.001);
    CategoricalCrossentropy loss;
    for (int epoch = 0; epoch < 5; ++epoch)
        for (auto [Xb, Yb] : multibatch(16, X, Y, shuffle)) {
            auto [Yh, backprop] = model.begin_update(Xb);
            backprop(loss.get_grad(Yh, Yb));
            model.finish_update(opt);
        }
    Floats2d P = model.predict(X);
    return int(P.shape(0));
}
