// The program every consumer project builds against tenon (tests/consumers/run.py): it
// trains a small model until it separates two classes, predicts, and exits 0 when it does.
#include <tenon/tenon.hpp>

#include <cstdio>

using namespace tenon;

int main() {
    Floats2d X({64, 4}), Y({64, 2});
    for (std::size_t i = 0; i < 64; ++i) {
        X(i, i % 4) = 1.0f;
        Y(i, (i % 4) / 2) = 1.0f;
    }
    auto model = Relu<16>() >> Softmax<>();
    model.initialize(X, Y);
    Optimizer opt = Adam(0.01);
    for (int step = 0; step < 200; ++step) {
        auto [Yh, backprop] = model.begin_update(X);
        backprop(CategoricalCrossentropy().get_grad(Yh, Y));
        model.finish_update(opt);
    }
    const Floats2d P = model.predict(X);
    std::printf("P(row 0) = %.3f %.3f, P(row 2) = %.3f %.3f\n", P(0, 0), P(0, 1), P(2, 0), P(2, 1));
    return P(0, 0) > 0.9f && P(2, 1) > 0.9f ? 0 : 1;
}
