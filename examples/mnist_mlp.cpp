// Thinc's intro MLP on Fashion-MNIST: Relu 512 (dropout 0.2) >> Relu 512 (dropout 0.2) >>
// Softmax, Adam 0.001, batch 128. Prints per-epoch time and test accuracy.
//   build/examples/mnist_mlp [epochs=2] [data dir]
#include <tenon/tenon.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

using namespace tenon;

// Fraction of rows whose highest-scoring class is the label.
static double accuracy(const Floats2d& P, const Ints1d& labels) {
    std::size_t correct = 0;
    for (std::size_t i = 0; i < P.shape(0); ++i) {
        std::size_t best = 0;
        for (std::size_t c = 1; c < P.shape(1); ++c)
            if (P(i, c) > P(i, best)) best = c;
        correct += static_cast<std::int32_t>(best) == labels[i];
    }
    return P.shape(0) ? double(correct) / double(P.shape(0)) : 0.0;
}

int main(int argc, char** argv) {
    const int epochs = argc > 1 ? std::atoi(argv[1]) : 2;
    const std::string dir = argc > 2 ? argv[2] : fashion_mnist_dir;
    // Results (stdout) and progress (stderr) in the order they happen, in a log too.
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    try {
        fix_random_seed(0);
        Dataset data = load_fashion_mnist(dir);
        const Floats2d Y_train = to_categorical(data.y_train, 10);

        auto model = Relu<512>({.dropout = 0.2}) >> Relu<512>({.dropout = 0.2}) >> Softmax<>();
        model.initialize(data.X_train, Y_train);  // nI = 784 and nO = 10 come from the data
        Optimizer opt = Adam(0.001);
        CategoricalCrossentropy loss;
        Progress progress;  // a bar on a terminal; one line per epoch (and nothing else in a log)

        std::printf("tenon %s: 784-512-512-10 MLP on Fashion-MNIST (%zu train, %zu test), GEMM kernel %s\n",
                    model.name().c_str(), data.X_train.shape(0), data.X_test.shape(0), cpu::gemm_target());
        for (int epoch = 1; epoch <= epochs; ++epoch) {
            auto batches = multibatch(128, data.X_train, Y_train, shuffle);
            progress.start_epoch(std::size_t(epoch), batches.size());
            for (auto [X, Y] : batches) {
                auto [Yh, backprop] = model.begin_update(X);
                // The cross-entropy by hand: the progress warns when it is not finite, before the
                // loss refuses NaN guesses (tenon-E134) or the optimizer a NaN gradient (tenon-E250).
                double batch_loss = 0;
                for (std::size_t i = 0, n = Yh.size(); i < n; ++i)
                    if (Y.data()[i] > 0) batch_loss -= std::log(std::max(Yh.data()[i], 1e-12f));
                // The images' gradient is not needed: params_only skips the product that makes it.
                backprop.params_only(loss.get_grad(Yh, Y));
                model.finish_update(opt);
                progress.step(batch_loss);
            }
            const double acc = accuracy(model.predict(data.X_test), data.y_test);
            progress.end_epoch({{"test accuracy", acc}});  // "epoch 1: 1.52 s, test accuracy 0.8412"
        }
        return 0;
    } catch (const Error& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
}
