// expect: tenon-E014
// minibatch(X, 25): the batch size written last, then the batches used in a training loop:
// the one error (the loop's begin_update and loss take the batches the call was meant to give).
#include <tenon/tenon.hpp>
using namespace tenon;

int main() {
    Floats2d X({100, 20});
    auto model = Relu<32>() >> Relu<20>();   // an autoencoder-ish regressor
    model.initialize(X, X);
    Optimizer opt = Adam(0.001);
    L2Distance loss;
    for (int epoch = 0; epoch < 5; ++epoch)
        for (auto Xb : minibatch(X, 25)) {
            auto [Yh, backprop] = model.begin_update(Xb);
            backprop(loss.get_grad(Yh, Xb));
            model.finish_update(opt);
        }
    Floats2d P = model.predict(X);
    return int(P.shape(0));
}
