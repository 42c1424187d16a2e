// tenon's side of `make bench-gpu` (docs/cuda.md, "The GPU benchmark"): the device backend on a
// CUDA GPU, beside PyTorch eager and torch.compile on the same GPU (bench/gpu_torch.py; both
// run by bench/gpu_run.py, which writes build-gpu/bench-gpu.json). Figures (JSON lines as
// bench/run.py reads them, "system": "tenon-cuda"):
//   fmnist_train_epoch_b128   s        the Fashion-MNIST MLP (784-512-512-10, Relu with dropout 0.2,
//                                      Softmax, Adam 0.001), one epoch at batch 128
//   fmnist_predict10k_b1024   s        predict of the 10k test images, batches of 1024 (best of 3)
//   mlp64_train_step_b65536   ms       a 4-layer MLP 64 wide (Relu x3, Softmax 10; nI 64), one
//   mlp128_train_step_b65536  ms       training step at batch 2^16 (median of 20), and predict
//   mlp64_predict_b65536, mlp128_predict_b65536   ms
//   tok2vec_train_wps, tok2vec_predict_wps        words/s  bench/tok2vec_bench.cpp's model and data
// The data goes to the device once (to_device) before the clock starts; every figure waits for
// its last result (to_host of the output), so the device's queue is inside the time.
//   gpu_bench [--figures a,b] [--fraction F] [--smoke-device-host]
// Without a CUDA build or a GPU it says so and exits 77 (a skip). --smoke-device-host runs the
// same code on the device backend built as host code, at a small fraction, to check the program
// where no GPU is (its figures are labelled "tenon-device-host-smoke": they are no GPU figures).
#include <tenon/tenon.hpp>

#include "bench_common.hpp"
#include "tok2vec_model.hpp"
#include <tenon/backend/device.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <sstream>
#include <string>
#include <vector>

using namespace tenon;
using namespace tenon::bench;

namespace {
std::string g_system = "tenon-cuda";

void put(const std::string& figure, double value, const char* unit) {
    std::printf("{\"figure\": \"%s\", \"system\": \"%s\", \"value\": %.6g, \"unit\": \"%s\"}\n", figure.c_str(),
                g_system.c_str(), value, unit);
    std::fflush(stdout);
}

Floats2d one_hot(const Ints1d& y, std::size_t n, std::size_t classes) {
    Floats2d Y({n, classes}, Memory::host);
    for (std::size_t i = 0; i < n; ++i) Y(i, static_cast<std::size_t>(y[i])) = 1.0f;
    return Y;
}

// Waits for the device's queue: a copy of one value of the model's first parameter to the host
// (a copy on the device's stream waits for the work before it).
void sync(Node& model) {
    for (Node* n : model.walk())
        for (const auto& name : n->param_names()) {
            const CParamView p = n->get_param(name);
            if (p.size()) {
                (void)to_host(ArrayView<const float, dyn>(p.data, {1}));
                return;
            }
        }
}

// A row block [b, e) of host X as a device array.
Floats2d rows_to_device(const Floats2d& X, std::size_t b, std::size_t e) {
    return to_device(ArrayView<const float, dyn, dyn>(X.data() + b * X.shape(1), {e - b, X.shape(1)}));
}

void fashion_mnist(const Ops& ops, double fraction, const std::function<bool(const std::string&)>& want) {
    if (!want("fmnist_train_epoch_b128") && !want("fmnist_predict10k_b1024")) return;
    const Dataset data = load_fashion_mnist();
    const std::size_t n = data.X_train.shape(0), batch = 128;
    const Floats2d Yh = one_hot(data.y_train, n, 10);
    // the epoch's batches on the device first (in a fixed shuffled order)
    std::vector<std::size_t> order(n);
    for (std::size_t i = 0; i < n; ++i) order[i] = i;
    SplitMix64 rng{7};
    for (std::size_t i = n; i > 1; --i) std::swap(order[i - 1], order[rng.next() % i]);
    Floats2d Xs({n, data.X_train.shape(1)}, Memory::host), Ys({n, 10}, Memory::host);
    for (std::size_t i = 0; i < n; ++i) {
        std::copy(data.X_train.row(order[i]).begin(), data.X_train.row(order[i]).end(), Xs.row(i).begin());
        std::copy(Yh.row(order[i]).begin(), Yh.row(order[i]).end(), Ys.row(i).begin());
    }
    const std::size_t n_batches = std::max<std::size_t>(1, static_cast<std::size_t>(double(n / batch) * fraction));
    std::vector<Floats2d> Xb, Yb;
    for (std::size_t b = 0; b < n_batches; ++b) {
        Xb.push_back(rows_to_device(Xs, b * batch, (b + 1) * batch));
        Yb.push_back(rows_to_device(Ys, b * batch, (b + 1) * batch));
    }
    fix_random_seed(0);
    auto model = Relu<512>({.dropout = 0.2}) >> Relu<512>({.dropout = 0.2}) >> Softmax<10>();
    model.initialize(ArrayView<const float, dyn, dyn>(Xs.data(), {batch, Xs.shape(1)}),
                     ArrayView<const float, dyn, dyn>(Ys.data(), {batch, 10}));  // on the host, then moved
    Optimizer opt = Adam(0.001);
    to_gpu(model, opt, ops);
    auto step = [&](std::size_t b) {
        auto [P, backprop] = model.begin_update(Xb[b]);
        Floats2d d = P;  // softmax + cross-entropy: (P - Y) / batch, on the device
        ops.copy_rows(Yb[b].data(), 10, d.data(), 10, batch, 10, false);
        ops.scale(d.data(), d.size(), -1.0f);
        ops.copy_rows(P.data(), 10, d.data(), 10, batch, 10, true);
        ops.scale(d.data(), d.size(), 1.0f / float(batch));
        backprop.params_only(d);
        model.finish_update(opt);
    };
    if (want("fmnist_train_epoch_b128")) {
        step(0);  // warm-up: the plan, the allocator, cuBLAS
        const auto t0 = Clock::now();
        for (std::size_t b = 0; b < n_batches; ++b) step(b);
        sync(model);
        put("fmnist_train_epoch_b128", seconds_since(t0) * double(n / batch) / double(n_batches), "s");
    }
    if (want("fmnist_predict10k_b1024")) {
        std::vector<Floats2d> Xt;
        const std::size_t nt = data.X_test.shape(0);
        for (std::size_t b = 0; b < nt; b += 1024) Xt.push_back(rows_to_device(data.X_test, b, std::min(nt, b + 1024)));
        double best = 1e30;
        for (int rep = 0; rep < 3; ++rep) {
            const auto t0 = Clock::now();
            Floats2d last;
            for (const auto& X : Xt) last = model.predict(X);
            (void)to_host(last);
            best = std::min(best, seconds_since(t0));
        }
        put("fmnist_predict10k_b1024", best, "s");
    }
}

template <extent_t W>
void wide_mlp(const Ops& ops, std::size_t rows, int reps, const std::function<bool(const std::string&)>& want) {
    const std::string tag = "mlp" + std::to_string(W), b = "_b" + std::to_string(rows);  // b65536 on a GPU
    if (!want(tag + "_train_step" + b) && !want(tag + "_predict" + b)) return;
    Rng rng(W);
    Floats2d Xh({rows, W}, uninitialized, Memory::host), dYh({rows, 10}, uninitialized, Memory::host);
    for (float& v : Xh) v = static_cast<float>(rng.uniform(-1.0, 1.0));
    for (float& v : dYh) v = static_cast<float>(rng.uniform(-1.0, 1.0)) / float(rows);
    fix_random_seed(0);
    auto model = Relu<W, W>() >> Relu<W>() >> Relu<W>() >> Softmax<10>();
    model.initialize();
    Optimizer opt = Adam(0.001);
    to_gpu(model, opt, ops);
    const Floats2d X = to_device(Xh), dY = to_device(dYh);
    auto step = [&] {
        auto [Y, backprop] = model.begin_update(X);
        backprop.params_only(dY);
        model.finish_update(opt);
    };
    if (want(tag + "_train_step" + b)) {
        step();
        std::vector<double> ms;
        for (int r = 0; r < reps; ++r) {
            const auto t0 = Clock::now();
            step();
            sync(model);
            ms.push_back(seconds_since(t0) * 1e3);
        }
        put(tag + "_train_step" + b, median(ms), "ms");
    }
    if (want(tag + "_predict" + b)) {
        (void)model.predict(X);
        std::vector<double> ms;
        for (int r = 0; r < reps; ++r) {
            const auto t0 = Clock::now();
            (void)to_host(model.predict(X));
            ms.push_back(seconds_since(t0) * 1e3);
        }
        put(tag + "_predict" + b, median(ms), "ms");
    }
}
}  // namespace

int main(int argc, char** argv) {
    double fraction = 1.0;
    bool smoke = false;
    std::set<std::string> figures;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--fraction" && i + 1 < argc) fraction = std::atof(argv[++i]);
        else if (a == "--smoke-device-host") smoke = true;
        else if (a == "--figures" && i + 1 < argc) {
            std::stringstream ss(argv[++i]);
            for (std::string f; std::getline(ss, f, ',');) figures.insert(f);
        } else {
            std::fprintf(stderr, "usage: gpu_bench [--figures a,b] [--fraction F] [--smoke-device-host]\n");
            return 2;
        }
    }
    const auto want = [&](const std::string& f) { return figures.empty() || figures.count(f) > 0; };
    const Ops* ops = nullptr;
    if (smoke) {
        g_system = "tenon-device-host-smoke";
        fraction = std::min(fraction, 0.01);
        ops = &device_host_ops();
    } else {
#if defined(TENON_HAVE_CUDA)
        if (cuda_device_present()) ops = &cuda_ops();
        else std::fprintf(stderr, "gpu_bench: no CUDA GPU is visible (cudaGetDeviceCount): nothing measured\n");
#else
        std::fprintf(stderr, "gpu_bench: this build has no CUDA backend (meson -Dcuda=enabled; make bench-gpu does "
                             "it): nothing measured\n");
#endif
        if (!ops) return 77;
    }
    const std::size_t rows = smoke ? 1024 : 65536;  // 2^16 on a GPU
    const int reps = smoke ? 2 : 20;
    try {
        fashion_mnist(*ops, fraction, want);
        wide_mlp<64>(*ops, rows, reps, want);
        wide_mlp<128>(*ops, rows, reps, want);
        if (want("tok2vec_train_wps") || want("tok2vec_predict_wps")) {
            using namespace tenon::bench::tok2vec;
            const Corpus corpus = generate();
            const std::size_t nb = std::max<std::size_t>(1, static_cast<std::size_t>(double(kDocs / kBatch) * fraction));
            std::vector<List<Ints2d>> batches;
            std::size_t words = 0;
            for (std::size_t b = 0; b < nb; ++b) {
                batches.emplace_back(corpus.docs.begin() + std::ptrdiff_t(b * kBatch),
                                     corpus.docs.begin() + std::ptrdiff_t((b + 1) * kBatch));
                for (const auto& d : batches.back()) words += d.shape(0);
            }
            fix_random_seed(0);
            auto model = make_model();
            model.initialize(batches[0]);
            Optimizer opt = Adam(0.001);
            to_gpu(model, opt, *ops);
            if (want("tok2vec_train_wps")) {
                // dY: the loss gradient's shape and scale (its values do not change the time)
                std::vector<List<Floats2d>> dYs;
                for (const auto& X : batches) {
                    List<Floats2d> dY;
                    for (const auto& d : X) dY.push_back(to_device(Floats2d({d.shape(0), kTags}, Memory::host)));
                    dYs.push_back(std::move(dY));
                }
                auto step = [&](std::size_t b) {
                    auto [Y, backprop] = model.begin_update(batches[b]);
                    backprop(dYs[b]);
                    model.finish_update(opt);
                };
                step(0);
                const auto t0 = Clock::now();
                for (std::size_t b = 0; b < nb; ++b) step(b);
                sync(model);
                put("tok2vec_train_wps", double(words) / seconds_since(t0), "words/s");
            }
            if (want("tok2vec_predict_wps")) {
                (void)model.predict(batches[0]);
                double best = 1e30;
                for (int pass = 0; pass < kPredictPasses; ++pass) {
                    const auto t0 = Clock::now();
                    List<Floats2d> P;
                    for (const auto& X : batches) P = model.predict(X);
                    (void)to_host(P);
                    best = std::min(best, seconds_since(t0));
                }
                put("tok2vec_predict_wps", double(words) / best, "words/s");
            }
        }
    } catch (const Error& e) {
        std::fprintf(stderr, "gpu_bench: %s\n", e.what());
        return 1;
    }
    return 0;
}
