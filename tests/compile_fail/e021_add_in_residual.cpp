// expect: tenon-E021
// expect-text: produces_width<5>
// A wrong add() inside residual(), trained and used: the one error (no "no matching function
// for call to residual(...)", no second id).
#include <tenon/tenon.hpp>
using namespace tenon;

int main() {
    auto model = residual(add(Relu<4>(), Linear<4>(), Relu<5>())) >> Softmax<3>();
    Floats2d X({4, 4}), Y({4, 3});
    model.initialize(X, Y);
    Optimizer opt = Adam(0.001);
    for (auto [Xb, Yb] : multibatch(2, X, Y)) {
        auto [Yh, backprop] = model.begin_update(Xb);
        backprop.params_only(CategoricalCrossentropy().get_grad(Yh, Yb));
        model.finish_update(opt);
    }
    Floats2d P = model.predict(X);
    return int(P.shape(0));
}
