// tenon's side of the LSTM benchmark (bench/run.py --lstm; not part of the default `make
// bench`): LSTM<128, 128> and BiLSTM<128, 128> (64 hiddens per direction), depth 1 and 2, on
// 8 batches of 32 sequences of 10-40 steps (fixed: the generator below, the same as
// bench/lstm_anchors.py's for Thinc 8.1's LSTM and PyTorch's nn.LSTM). Prints JSON lines
// {"figure", "system", "value", "unit"}, for each configuration C in lstm_d1, lstm_d2,
// bilstm_d1, bilstm_d2:
//   C_train_tps    tokens/s  begin_update + backprop + finish_update(Adam(0.001)), a batch a step
//   C_predict_tps  tokens/s  predict, a batch a call
// each the median of the timed passes over the 8 batches (one untimed warm-up pass first).
//   lstm_bench [--threads N] [--passes P] [--configs a,b] [--split] [--check]
//   (--threads 0: every core; default 1. --split: also time the forward, the backprop and
//    the optimizer step of a training step apart, on stderr.)
// The output gradient is dY = Y / 32 (the gradient of sum(Y^2) / 64; the same on every side).
#include <tenon/tenon.hpp>

#include "bench_common.hpp"
#include <tenon/backend/cpu/threads.hpp>
#include <tenon/types/sequences.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace tenon;
using namespace tenon::bench;

namespace {
constexpr std::uint64_t kSeed = 20261203;
constexpr std::size_t kBatches = 8, kBatch = 32, kMinLen = 10, kMaxLen = 40, kWidth = 128;
constexpr int kDefaultPasses = 7;

// bench/lstm_anchors.py's generator: sequence s's length is 10 + r % 31; the values, over the
// sequences' rows concatenated (flat index k), are ((k * 2654435761) mod 2^32) / 2^31 - 1.
struct Corpus {
    std::vector<Padded> batches;
    std::size_t tokens = 0;
    double checksum = 0;
};
Corpus generate() {
    SplitMix64 rng{kSeed};
    Corpus c;
    std::uint64_t k = 0;
    for (std::size_t b = 0; b < kBatches; ++b) {
        std::vector<Floats2d> xs;
        for (std::size_t s = 0; s < kBatch; ++s) {
            const std::size_t len = kMinLen + rng.next() % (kMaxLen - kMinLen + 1);
            Floats2d x({len, kWidth}, uninitialized);
            for (float& v : x) {
                v = static_cast<float>(double((k++ * 2654435761ull) & 0xFFFFFFFFull) / 2147483648.0 - 1.0);
                c.checksum += v;
            }
            c.tokens += len;
            xs.push_back(std::move(x));
        }
        c.batches.push_back(to_padded(List<Floats2d>(std::move(xs))));
    }
    return c;
}

struct Config {
    const char* name;
    bool bi;
    std::size_t depth;
};
constexpr Config kConfigs[] = {{"lstm_d1", false, 1}, {"lstm_d2", false, 2}, {"bilstm_d1", true, 1}, {"bilstm_d2", true, 2}};

Padded gradient(const Padded& Y) {
    Floats3d d = Y.data();
    for (float& v : d) v *= 1.0f / static_cast<float>(kBatch);
    return Y.with_data(std::move(d));
}
}  // namespace

int main(int argc, char** argv) {
    std::size_t threads = 1;
    int passes = kDefaultPasses;
    bool check = false, split = false;
    std::string only;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--threads" && i + 1 < argc) threads = static_cast<std::size_t>(std::atol(argv[++i]));
        else if (a == "--passes" && i + 1 < argc) passes = std::max(1, std::atoi(argv[++i]));
        else if (a == "--configs" && i + 1 < argc) only = std::string(",").append(argv[++i]).append(",");  // (not "," + ...: GCC 12's -Wrestrict false positive)
        else if (a == "--check") check = true;
        else if (a == "--split") split = true;
        else {
            std::fprintf(stderr, "usage: lstm_bench [--threads N] [--passes P] [--configs a,b] [--split] [--check]\n");
            return 2;
        }
    }
    set_num_threads(threads);
    const Corpus corpus = generate();
    std::fprintf(stderr, "lstm_bench: %zu batches of %zu, %zu tokens, checksum %.6f, threads %zu, passes %d\n",
                 kBatches, kBatch, corpus.tokens, corpus.checksum, threads, passes);
    const double tokens = static_cast<double>(corpus.tokens);

    for (const Config& cfg : kConfigs) {
        if (!only.empty() && only.find("," + std::string(cfg.name) + ",") == std::string::npos) continue;
        LSTM<> model(LSTMOptions{.bi = cfg.bi, .depth = cfg.depth}, kWidth, kWidth);
        model.initialize(corpus.batches[0]);
        Optimizer opt = Adam(0.001);
        double t_fwd = 0, t_bwd = 0, t_opt = 0;
        auto train_pass = [&] {
            for (const Padded& X : corpus.batches) {
                if (split) {
                    auto t0 = Clock::now();
                    auto [Y, backprop] = model.begin_update(X);
                    t_fwd += seconds_since(t0);
                    const Padded dY = gradient(Y);
                    t0 = Clock::now();
                    backprop(dY);
                    t_bwd += seconds_since(t0);
                    t0 = Clock::now();
                    model.finish_update(opt);
                    t_opt += seconds_since(t0);
                } else {
                    auto [Y, backprop] = model.begin_update(X);
                    backprop(gradient(Y));
                    model.finish_update(opt);
                }
            }
        };
        train_pass();  // warm-up
        if (check) {
            const Padded Y = model.predict(corpus.batches[0]);
            std::printf("{\"check\": \"ok\", \"config\": \"%s\", \"shape\": [%zu, %zu, %zu], \"first\": %.6g}\n", cfg.name,
                        Y.data().shape(0), Y.data().shape(1), Y.data().shape(2), double(Y.data()[0]));
            continue;
        }
        t_fwd = t_bwd = t_opt = 0;
        std::vector<double> times;
        for (int p = 0; p < passes; ++p) {
            const auto t0 = Clock::now();
            train_pass();
            times.push_back(seconds_since(t0));
        }
        emit(std::string(cfg.name) + "_train_tps", tokens / median(times), "tokens/s");
        if (split)
            std::fprintf(stderr, "  %s train per pass: forward %.2f ms, backprop %.2f ms, Adam %.2f ms\n", cfg.name,
                         1e3 * t_fwd / passes, 1e3 * t_bwd / passes, 1e3 * t_opt / passes);
        for (const Padded& X : corpus.batches) (void)model.predict(X);  // warm-up
        times.clear();
        for (int p = 0; p < passes; ++p) {
            const auto t0 = Clock::now();
            std::size_t steps = 0;
            for (const Padded& X : corpus.batches) steps += model.predict(X).steps();
            times.push_back(seconds_since(t0));
            if (steps == 0) return 1;
        }
        emit(std::string(cfg.name) + "_predict_tps", tokens / median(times), "tokens/s");
    }
    return 0;
}
