// expect: tenon-E056
// Thinc's Maxout(nO, nI, nP) with three numbers.
#include <tenon/tenon.hpp>
using namespace tenon;

int main() {
    auto model = Maxout<>(64, 32, 3) >> Softmax<3>();
    Floats2d X({8, 32});
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
