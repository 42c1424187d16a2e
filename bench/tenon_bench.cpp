// tenon's side of `make bench`: the Fashion-MNIST MLP (784-512-512-10, Relu with dropout 0.2,
// Softmax, Adam 0.001) timed the way bench/bench_thinc.py and bench/bench_torch.py time
// Thinc and PyTorch. Prints JSON lines {"figure", "system", "value", "unit"}.
// Also what holding that model in an AnyModel costs (issue 18: at most 1 us per call at batch 1
// and 2% at batch 128 against the static model), and the same model built from a config
// (figures anymodel_* and config_*, tenon's own: see time_any_model below).
//   tenon_bench [--fraction F] [--latency-n N] [--figures a,b] [--threads N]
#include <tenon/tenon.hpp>

#include "bench_common.hpp"
#include <tenon/backend/cpu/threads.hpp>
#include <tenon/config/registry.hpp>

#include <algorithm>
#include <array>
#include <functional>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace tenon;
using namespace tenon::bench;

namespace {
auto make_model() { return Relu<512>({.dropout = 0.2}) >> Relu<512>({.dropout = 0.2}) >> Softmax<10>(); }

double percentile(std::vector<double> v, double p) {
    std::sort(v.begin(), v.end());
    const std::size_t i = std::min(v.size() - 1, static_cast<std::size_t>(p * double(v.size() - 1) + 0.5));
    return v[i];
}

// make_model()'s MLP written as a config (docs/configs.md): config::build_model makes it an
// AnyModel holding a DynChain of AnyModel steps (Relu<dyn>, Relu<dyn>, Softmax<dyn>).
constexpr const char* kMlpConfig = R"(
[model]
@layers = "chain.v1"

[model.*.relu1]
@layers = "Relu.v1"
nO = 512
dropout = 0.2

[model.*.relu2]
@layers = "Relu.v1"
nO = 512
dropout = 0.2

[model.*.softmax]
@layers = "Softmax.v1"
nO = 10
)";

// The small model of the batch-1 figures, Relu<64>() >> Softmax<10>() with nI 64 (about 1 us
// a call: the MLP's 20-70 us at batch 1 vary by more than the 1 us to be checked), and as a
// config.
auto make_small_model() { return Relu<64>() >> Softmax<10>(); }
constexpr const char* kSmallConfig = R"(
[model]
@layers = "chain.v1"

[model.*.relu]
@layers = "Relu.v1"
nO = 64

[model.*.softmax]
@layers = "Softmax.v1"
nO = 10
)";

// The us per call of each of f (static, AnyModel, config), timed in `rounds` rounds: each
// round times a loop of `calls` calls of each, in a rotating order (none always first), so
// that the three see the same machine; after a warm-up (plans made, block caches filled).
std::array<std::vector<double>, 3> time_interleaved(const std::array<std::function<void()>, 3>& f, int rounds,
                                                    int calls) {
    for (int w = 0; w < std::max(2, calls / 2); ++w)
        for (const auto& g : f) g();
    std::array<std::vector<double>, 3> us;
    for (int r = 0; r < rounds; ++r)
        for (int k = 0; k < 3; ++k) {
            const int v = (r + k) % 3;
            const auto t0 = Clock::now();
            for (int i = 0; i < calls; ++i) f[v]();
            us[v].push_back(seconds_since(t0) * 1e6 / calls);
        }
    return us;
}

// The median over rounds of each round's b against its a: b - a in ns, or b / a - 1 in %
// (paired within a round, so a drift of the machine's speed between rounds cancels), with its
// rounds' quartiles (q1, q3: how noisy it was), emitted as `figure`.
void emit_overhead(const std::string& figure, const std::vector<double>& a, const std::vector<double>& b,
                   bool percent) {
    std::vector<double> d;
    for (std::size_t r = 0; r < a.size(); ++r) d.push_back(percent ? 100.0 * (b[r] / a[r] - 1.0) : 1e3 * (b[r] - a[r]));
    std::printf("{\"figure\": \"%s\", \"system\": \"tenon\", \"value\": %.6g, \"unit\": \"%s\", \"q1\": %.6g, "
                "\"q3\": %.6g, \"rounds\": %zu}\n",
                figure.c_str(), percentile(d, 0.5), percent ? "%" : "ns", percentile(d, 0.25), percentile(d, 0.75),
                d.size());
    std::fflush(stdout);
}

Floats2d random_inputs(std::size_t rows, std::size_t width) {
    Rng rng(rows);
    Floats2d X({rows, width}, uninitialized);
    for (float& v : X) v = static_cast<float>(rng.uniform(0.0, 1.0));
    return X;
}

struct AnyCase {
    const char* suffix;    // figures anymodel_<suffix>_static, anymodel_<suffix>, config_<suffix>
    const char* overhead;  // figures anymodel_overhead_<overhead>, config_overhead_<overhead>
    std::size_t batch;
    bool train;
    int calls;   // per loop: a few ms
    int rounds;  // with --fraction 1
};

// One case of time_any_model: `model` called as itself, through an AnyModel holding a copy of
// it, and `config_text` built by config::build_model, all initialised on the same sample.
template <class M>
void time_any_case(const AnyCase& c, M model, const char* config_text, std::size_t width,
                   const std::function<bool(const std::string&)>& want, double fraction) {
    const std::string s = c.suffix, o = c.overhead;
    if (!(want("anymodel_" + s + "_static") || want("anymodel_" + s) || want("config_" + s) ||
          want("anymodel_overhead_" + o) || want("config_overhead_" + o)))
        return;
    auto one_hot = [](std::size_t rows) {
        Floats2d Y({rows, 10});
        for (std::size_t i = 0; i < rows; ++i) Y.data()[i * 10 + i % 10] = 1.0f;
        return Y;
    };
    const Floats2d X = random_inputs(c.batch, width), Y = one_hot(c.batch);
    fix_random_seed(0);
    model.initialize(random_inputs(128, width), one_hot(128));
    AnyModel<Floats2d, Floats2d> held = copy(model);
    AnyModel<Floats2d, Floats2d> built = config::build_model<Floats2d, Floats2d>(config::Config::from_str(config_text));
    built.initialize(random_inputs(128, width), one_hot(128));
    Optimizer opt[3] = {Adam(0.001), Adam(0.001), Adam(0.001)};
    CategoricalCrossentropy loss;
    volatile float sink = 0;
    auto step = [&](auto& m, Optimizer& opt) {
        auto [Yh, backprop] = m.begin_update(X);
        backprop.params_only(loss.get_grad(Yh, Y));
        m.finish_update(opt);
    };
    std::array<std::function<void()>, 3> f;
    if (!c.train)
        f = {[&] { sink = sink + model.predict(X).data()[0]; }, [&] { sink = sink + held.predict(X).data()[0]; },
             [&] { sink = sink + built.predict(X).data()[0]; }};
    else
        f = {[&] { step(model, opt[0]); }, [&] { step(held, opt[1]); }, [&] { step(built, opt[2]); }};
    const int rounds = std::max(9, static_cast<int>(c.rounds * fraction + 0.5));  // --quick: 9
    const auto us = time_interleaved(f, rounds, c.calls);
    const bool percent = c.batch > 1;
    if (want("anymodel_" + s + "_static")) emit("anymodel_" + s + "_static", percentile(us[0], 0.5), "us");
    if (want("anymodel_" + s)) emit("anymodel_" + s, percentile(us[1], 0.5), "us");
    if (want("config_" + s)) emit("config_" + s, percentile(us[2], 0.5), "us");
    if (want("anymodel_overhead_" + o)) emit_overhead("anymodel_overhead_" + o, us[0], us[1], percent);
    if (want("config_overhead_" + o)) emit_overhead("config_overhead_" + o, us[0], us[2], percent);
}

// AnyModel's cost (include/tenon/model/any_model.hpp; issue 18: at most 1 us per call at
// batch 1, 2% at batch 128). Each case times a model called as itself ("static"), through an
// AnyModel<Floats2d, Floats2d> holding a copy of it, and the same model built from a config;
// random inputs, not the dataset. Emits the median us per call of each and the overheads
// against the static model (the median of the rounds' paired differences): ns per call at
// batch 1, % at batch 128.
// - predict_b1: make_small_model() (nI 64), whose call is short enough to resolve 1 us;
// - predict_b128, train_b128: make_model(), the bench's MLP (nI 784); a training step is
//   begin_update, params_only and Adam's finish_update, as train_epoch_b128. The DynChain has
//   no params_only: its step also computes the input's gradient (one more product).
void time_any_model(const std::function<bool(const std::string&)>& want, double fraction) {
    time_any_case({"predict_b1", "b1", 1, false, 2000, 51}, make_small_model(), kSmallConfig, 64, want, fraction);
    time_any_case({"predict_b128", "b128", 128, false, 5, 21}, make_model(), kMlpConfig, 784, want, fraction);
    time_any_case({"train_b128", "train_b128", 128, true, 3, 21}, make_model(), kMlpConfig, 784, want, fraction);
}
}  // namespace

int main(int argc, char** argv) {
    double fraction = 1.0;
    int latency_n = 2000;
    std::set<std::string> figures;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "tenon_bench: %s needs a value\n", a.c_str());
                std::exit(2);
            }
            return argv[++i];
        };
        if (a == "--fraction") fraction = std::atof(next().c_str());
        else if (a == "--latency-n") latency_n = std::atoi(next().c_str());
        else if (a == "--threads") set_num_threads(static_cast<std::size_t>(std::atol(next().c_str())));  // 0: all cores
        else if (a == "--figures") {
            std::stringstream ss(next());
            for (std::string f; std::getline(ss, f, ',');) figures.insert(f);
        } else {
            std::fprintf(stderr, "usage: tenon_bench [--fraction F] [--latency-n N] [--figures a,b] [--threads N]\n");
            return 2;
        }
    }
    if (!(fraction > 0.0 && fraction <= 1.0) || latency_n < 1) {
        std::fprintf(stderr, "tenon_bench: --fraction must be in (0, 1] and --latency-n >= 1\n");
        return 2;
    }
    auto want = [&](const std::string& f) { return figures.empty() || figures.count(f); };

    try {
        std::fprintf(stderr, "tenon_bench: GEMM kernel %s, %zu thread(s)\n", cpu::gemm_target(), num_threads());
        // The dataset is not loaded when only AnyModel's figures are asked for (they are timed
        // last, so that the figures before them are measured as they were without them).
        const bool any_dataset_figure = figures.empty() || std::any_of(figures.begin(), figures.end(), [](const std::string& f) {
            return f.rfind("anymodel_", 0) != 0 && f.rfind("config_", 0) != 0;
        });
        if (!any_dataset_figure) {
            time_any_model(want, fraction);
            return 0;
        }
        fix_random_seed(0);
        Dataset data = load_fashion_mnist();
        const Floats2d Y_train = to_categorical(data.y_train, 10);

        // *_nocheck: the same figure with the input check for NaN/inf off
        // (set_check_finite_inputs(false), docs/reliability.md), in the same run.
        struct TrainRun {
            std::size_t batch;
            bool check;
        };
        for (const TrainRun run : {TrainRun{128, true}, TrainRun{128, false}, TrainRun{32, true}}) {
            const std::size_t batch = run.batch;
            const std::string fig = "train_epoch_b" + std::to_string(batch) + (run.check ? "" : "_nocheck");
            if (!want(fig)) continue;
            set_check_finite_inputs(run.check);
            auto model = make_model();
            model.initialize(data.X_train, Y_train);
            auto plan = lower(model);  // fused stages over one workspace (docs/lowering.md)
            Optimizer opt = Adam(0.001);
            CategoricalCrossentropy loss;
            auto batches = multibatch(batch, data.X_train, Y_train, shuffle);
            const auto n_batches = static_cast<std::size_t>(double(batches.size()) * fraction + 0.5);
            std::size_t done = 0;
            const auto t0 = Clock::now();
            for (auto [X, Y] : batches) {
                if (done++ == n_batches) break;
                auto [Yh, backprop] = plan.begin_update(X);
                backprop.params_only(loss.get_grad(Yh, Y));  // like the anchors: no gradient for the images
                model.finish_update(opt);
            }
            const double secs = seconds_since(t0);
            emit(fig, secs * double(batches.size()) / double(std::max<std::size_t>(n_batches, 1)), "s");
            // Test accuracy after one full epoch at batch 128, like the anchors.
            if (batch == 128 && run.check && fraction >= 1.0 && want("accuracy_1epoch")) {
                const Floats2d P = plan.predict(data.X_test);
                std::size_t right = 0;
                for (std::size_t i = 0; i < P.shape(0); ++i) {
                    const auto row = P.row(i);
                    const auto best = std::max_element(row.begin(), row.end()) - row.begin();
                    right += static_cast<std::size_t>(best) == static_cast<std::size_t>(data.y_test[i]);
                }
                emit("accuracy_1epoch", double(right) / double(P.shape(0)), "fraction");
            }
        }

        auto model = make_model();
        model.initialize(data.X_train, Y_train);
        // The serving path: a held plan with its weights frozen (W kept packed for the
        // product: docs/lowering.md, "Frozen weights"); *_unfrozen: the same plan packing W
        // at every call, in the same run.
        auto plan = lower(model);
        plan.freeze_weights();
        const auto unfrozen = lower(model);
        set_check_finite_inputs(true);
        struct PredictRun {
            std::size_t batch;
            bool check;
            bool frozen;
        };
        for (const PredictRun run : {PredictRun{128, true, true}, PredictRun{128, false, true},
                                     PredictRun{1024, true, true}, PredictRun{128, true, false},
                                     PredictRun{1024, true, false}}) {
            const std::size_t batch = run.batch;
            const std::string fig = "predict10k_b" + std::to_string(batch) + (run.check ? "" : "_nocheck") +
                                    (run.frozen ? "" : "_unfrozen");
            if (!want(fig)) continue;
            set_check_finite_inputs(run.check);
            double best = 1e30;
            for (int rep = 0; rep < 3; ++rep) {
                const auto t0 = Clock::now();
                for (const auto& X : minibatch(batch, data.X_test)) {
                    const Floats2d P = run.frozen ? plan.predict(X) : unfrozen.predict(X);
                    if (P.shape(0) == 0) std::abort();
                }
                best = std::min(best, seconds_since(t0));
            }
            emit(fig, best, "s");
        }

        set_check_finite_inputs(true);
        // The input check alone (tenon/model/finite.hpp: detail::count_nonfinite, what predict and
        // begin_update run on the model's input), over successive 128-row batches of the
        // training images as an epoch reads them: the median time per batch. Timed by itself
        // because its share of a step is below the noise of the epoch figures.
        if (want("finite_check_b128")) {
            const std::size_t rows = 128, width = data.X_train.shape(1), n_batches = data.X_train.shape(0) / rows;
            std::vector<double> us;
            std::size_t bad = 0;
            for (std::size_t i = 0; i < 4 * n_batches; ++i) {
                const float* x = data.X_train.data() + (i % n_batches) * rows * width;
                const auto t0 = Clock::now();
                bad += detail::count_nonfinite(x, rows * width);
                us.push_back(seconds_since(t0) * 1e6);
            }
            if (bad != 0) std::abort();
            emit("finite_check_b128", percentile(us, 0.50), "us");
        }

        // Batch-1 latencies: the times of latency_n calls after 200 of warm-up.
        const auto latencies = [&] {
            Floats2d x({1, 784}, uninitialized);
            std::vector<double> us;
            us.reserve(static_cast<std::size_t>(latency_n));
            for (int i = 0; i < latency_n + 200; ++i) {
                std::copy(data.X_test.row(static_cast<std::size_t>(i) % 10000).begin(),
                          data.X_test.row(static_cast<std::size_t>(i) % 10000).end(), x.data());
                const auto t0 = Clock::now();
                const Floats2d p = plan.predict(x);
                const double t = seconds_since(t0) * 1e6;
                if (p.shape(1) != 10) std::abort();
                if (i >= 200) us.push_back(t);
            }
            return us;
        };
        if (want("latency_b1_p50") || want("latency_b1_p99")) {
            const std::vector<double> us = latencies();
            if (want("latency_b1_p50")) emit("latency_b1_p50", percentile(us, 0.50), "us");
            if (want("latency_b1_p99")) emit("latency_b1_p99", percentile(us, 0.99), "us");
        }
        // The same p99 while another process keeps one core busy (a neighbour on a shared
        // server): the worker pool must not make a call wait for a thread that has no core.
        if (want("latency_b1_p99_loaded") || want("latency_b1_p50_loaded")) {
            const pid_t child = fork();
            if (child == 0) {  // the competing process: spins until killed
                volatile std::uint64_t spin = 0;
                for (;;) spin = spin + 1;
            }
            if (child < 0) {
                std::perror("tenon_bench: fork");
                return 1;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(100));  // let it take its core
            const std::vector<double> us = latencies();
            kill(child, SIGKILL);
            waitpid(child, nullptr, 0);
            if (want("latency_b1_p50_loaded")) emit("latency_b1_p50_loaded", percentile(us, 0.50), "us");
            if (want("latency_b1_p99_loaded")) emit("latency_b1_p99_loaded", percentile(us, 0.99), "us");
        }
        time_any_model(want, fraction);
        return 0;
    } catch (const Error& e) {
        std::fprintf(stderr, "tenon_bench: %s\n", e.what());
        return 1;
    }
}
