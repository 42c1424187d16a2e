// expect: tenon-E001
// A width mistake, then the getting-started evaluation loop over predict's result held in auto:
// the comparisons of a failed model's values (P(i, t) > P(i, best)) add nothing.
#include <cstdio>
#include <tenon/tenon.hpp>
using namespace tenon;

int main() {
    auto model = Relu<32, 10>() >> Relu<32>() >> Softmax<4, 16>();
    Floats2d X({8, 10});
    Ints1d y({8}, {0, 1, 2, 3, 0, 1, 2, 3});
    Floats2d Y = to_categorical(y, 4);
    model.initialize(X, Y);
    Optimizer opt = Adam(0.001);
    CategoricalCrossentropy loss;
    double best = 1e9;
    for (int epoch = 0; epoch < 3; ++epoch) {
        double total = 0;
        for (auto [Xb, Yb] : multibatch(4, X, Y, shuffle)) {
            auto [Yh, backprop] = model.begin_update(Xb);
            auto l = loss.get_loss(Yh, Yb);
            total += l;
            backprop(loss.get_grad(Yh, Yb));
            model.finish_update(opt);
        }
        if (total < best) best = total;
        auto P = model.predict(X);
        std::size_t correct = 0;
        for (std::size_t i = 0; i < P.shape(0); ++i) {
            std::size_t arg = 0;
            for (std::size_t c = 1; c < P.shape(1); ++c)
                if (P(i, c) > P(i, arg)) arg = c;
            correct += static_cast<std::int32_t>(arg) == y[i];
        }
        std::printf("epoch %d: %zu correct\n", epoch, correct);
    }
    return 0;
}
