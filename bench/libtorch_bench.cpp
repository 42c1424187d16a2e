// LibTorch (C++ API) anchor for `make bench`: the model and protocol of bench/bench_torch.py
// without the Python interpreter in the loop.
//
// Model: Linear(784,512) ReLU Dropout(0.2) Linear(512,512) ReLU Dropout(0.2) Linear(512,10),
// PyTorch's default initialisation, Adam(lr 0.001, PyTorch defaults), gradients set to none
// before each step (as zero_grad(set_to_none=True) in the Python anchor). Training uses
// cross_entropy on the logits (softmax folded into the loss, mean over the batch);
// prediction runs under InferenceMode with eval() and includes the softmax.
// Timing follows bench/anchor_common.py: a throw-away 3-batch warm-up before each epoch and
// extrapolation from --fraction of the batches; predict10k times one pass after a 4-batch
// warm-up; latency is the nearest-rank p50/p99 of batch-1 calls after --latency-warmup calls.
//
//   libtorch_bench [--fraction F] [--latency-n N] [--latency-warmup N] [--figures a,b]
//                  [--threads N (1: one thread; 0: library default)] [--seed S]
// Prints JSON lines {"figure", "system", "value", "unit", "threads"}; system "libtorch"
// for --threads 1, "libtorch-mt" for 0, "libtorch-tN" otherwise.
#include <torch/torch.h>
#include <zlib.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

namespace {
using Clock = std::chrono::steady_clock;
constexpr int kHidden = 512;
constexpr double kDropout = 0.2;
constexpr double kLearnRate = 0.001;
const char* const kAllFigures[] = {"train_epoch_b128", "train_epoch_b32", "predict10k_b128", "predict10k_b1024",
                                   "latency_b1_p50",   "latency_b1_p99",  "accuracy_1epoch"};

struct Options {
    double fraction = 1.0;
    int latency_n = 2000;
    int latency_warmup = 200;
    int threads = 0;
    std::uint64_t seed = 0;
    std::set<std::string> figures;
    bool want(const std::string& f) const { return figures.count(f) != 0; }
};

[[noreturn]] void usage(const char* why) {
    std::fprintf(stderr,
                 "libtorch_bench: %s\nusage: libtorch_bench [--fraction F] [--latency-n N] [--latency-warmup N] "
                 "[--figures a,b] [--threads N] [--seed S]\n",
                 why);
    std::exit(2);
}

Options parse(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) usage((a + " needs a value").c_str());
            return argv[++i];
        };
        if (a == "--fraction") o.fraction = std::atof(next().c_str());
        else if (a == "--latency-n") o.latency_n = std::atoi(next().c_str());
        else if (a == "--latency-warmup") o.latency_warmup = std::atoi(next().c_str());
        else if (a == "--threads") o.threads = std::atoi(next().c_str());
        else if (a == "--seed") o.seed = std::strtoull(next().c_str(), nullptr, 10);
        else if (a == "--figures") {
            std::stringstream ss(next());
            for (std::string f; std::getline(ss, f, ',');)
                if (!f.empty()) o.figures.insert(f);
        } else usage(("unknown option " + a).c_str());
    }
    if (!(o.fraction > 0.0 && o.fraction <= 1.0)) usage("--fraction must be in (0, 1]");
    if (o.latency_n < 1 || o.latency_warmup < 0) usage("--latency-n must be >= 1");
    for (const auto& f : o.figures)
        if (std::find_if(std::begin(kAllFigures), std::end(kAllFigures), [&](const char* g) { return f == g; }) ==
            std::end(kAllFigures))
            usage(("unknown figure " + f).c_str());
    if (o.figures.empty()) o.figures.insert(std::begin(kAllFigures), std::end(kAllFigures));
    return o;
}

// OpenBLAS and libgomp size their thread pools from the environment when they are loaded,
// i.e. before main(); like anchor_common.setup_threads(), pin them by re-executing ourselves
// with the variables set.
void pin_threads_or_reexec(int threads, char** argv) {
    if (threads <= 0) return;
    const std::string n = std::to_string(threads);
    const char* cur = std::getenv("OPENBLAS_NUM_THREADS");
    if (cur && n == cur) return;
    for (const char* var : {"OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS"})
        setenv(var, n.c_str(), 1);
    execv("/proc/self/exe", argv);
    std::perror("libtorch_bench: execv /proc/self/exe (continuing without pinned BLAS threads)");
}

std::string system_name(int threads) {
    return threads == 1 ? "libtorch" : threads <= 0 ? "libtorch-mt" : "libtorch-t" + std::to_string(threads);
}

struct Emitter {
    std::string system;
    int threads;
    void operator()(const std::string& figure, double value, const char* unit, const std::string& extra = "") const {
        std::printf("{\"figure\": \"%s\", \"system\": \"%s\", \"value\": %.9g, \"unit\": \"%s\", \"threads\": %d%s}\n",
                    figure.c_str(), system.c_str(), value, unit, threads, extra.c_str());
        std::fflush(stdout);
    }
};

// --------------------------------------------------------------------------- Fashion-MNIST
std::string data_dir() {
    const char* d = std::getenv("FASHION_MNIST_DIR");
    return d ? d : "/usr/share/datasets/fashion-mnist";
}

// Reads an IDX file (gzip, or the same name without .gz); returns the bytes after the header.
std::vector<std::uint8_t> read_idx(const std::string& path, std::uint32_t magic, std::vector<std::uint32_t>& dims) {
    gzFile f = gzopen(path.c_str(), "rb");  // zlib reads uncompressed files transparently
    if (!f) f = gzopen(path.substr(0, path.size() - 3).c_str(), "rb");
    if (!f) throw std::runtime_error("cannot open " + path);
    auto be32 = [&]() {
        unsigned char b[4];
        if (gzread(f, b, 4) != 4) throw std::runtime_error(path + ": truncated header");
        return std::uint32_t(b[0]) << 24 | std::uint32_t(b[1]) << 16 | std::uint32_t(b[2]) << 8 | b[3];
    };
    const std::uint32_t m = be32();
    if (m != magic) throw std::runtime_error(path + ": bad IDX magic " + std::to_string(m));
    std::size_t n = 1;
    dims.resize(magic & 0xff);
    for (auto& d : dims) n *= (d = be32());
    std::vector<std::uint8_t> buf(n);
    if (gzread(f, buf.data(), unsigned(n)) != int(n)) throw std::runtime_error(path + ": truncated data");
    gzclose(f);
    return buf;
}

// X: float32 (n, 784) in [0, 1]; y: int64 (n).
std::pair<torch::Tensor, torch::Tensor> load_split(const std::string& split) {
    std::vector<std::uint32_t> dx, dy;
    auto px = read_idx(data_dir() + "/" + split + "-images-idx3-ubyte.gz", 2051, dx);
    auto py = read_idx(data_dir() + "/" + split + "-labels-idx1-ubyte.gz", 2049, dy);
    if (dx[0] != dy[0]) throw std::runtime_error(split + ": images and labels differ in count");
    const auto n = std::int64_t(dx[0]), w = std::int64_t(dx[1] * dx[2]);
    auto X = torch::from_blob(px.data(), {n, w}, torch::kUInt8).to(torch::kFloat32).div_(255.0f);
    auto y = torch::from_blob(py.data(), {n}, torch::kUInt8).to(torch::kInt64);
    return {X, y};
}

// --------------------------------------------------------------------------- timing helpers
double seconds(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// anchor_common.epoch_batches: (batches run for `fraction` of an epoch, batches per epoch);
// nearbyint rounds half to even, as Python's round().
std::pair<std::int64_t, std::int64_t> epoch_batches(std::int64_t n, std::int64_t batch, double fraction) {
    const std::int64_t total = (n + batch - 1) / batch;
    if (fraction >= 1.0) return {total, total};
    const auto run = std::int64_t(std::nearbyint(double(total) * fraction));
    return {std::clamp<std::int64_t>(run, 1, total), total};
}

// anchor_common.percentile: nearest rank on an ascending list.
double percentile(const std::vector<double>& sorted, double q) {
    const auto k = std::int64_t(std::ceil(q / 100.0 * double(sorted.size()))) - 1;
    return sorted[std::size_t(std::clamp<std::int64_t>(k, 0, std::int64_t(sorted.size()) - 1))];
}

torch::nn::Sequential make_model() {
    using namespace torch::nn;
    return Sequential(Linear(784, kHidden), ReLU(), Dropout(kDropout), Linear(kHidden, kHidden), ReLU(),
                      Dropout(kDropout), Linear(kHidden, 10));
}
}  // namespace

int main(int argc, char** argv) {
    const Options opt = parse(argc, argv);
    pin_threads_or_reexec(opt.threads, argv);
    if (opt.threads > 0) at::set_num_threads(opt.threads);
    const Emitter emit{system_name(opt.threads), at::get_num_threads()};
    auto log = [&](const std::string& msg) { std::fprintf(stderr, "[libtorch_bench] %s\n", msg.c_str()); };

    try {
        torch::manual_seed(opt.seed);
        log("loading Fashion-MNIST from " + data_dir() + " (LibTorch " + TORCH_VERSION + ", " +
            std::to_string(at::get_num_threads()) + " intra-op thread(s))");
        torch::Tensor X_train, y_train, X_test, y_test;  // not structured bindings: lambdas capture them
        std::tie(X_train, y_train) = load_split("train");
        std::tie(X_test, y_test) = load_split("t10k");
        const std::int64_t n_train = X_train.size(0), n_test = X_test.size(0);

        auto train_batches = [&](torch::nn::Sequential& model, torch::optim::Adam& adam, std::int64_t batch,
                                 std::int64_t n_batches, torch::Generator& gen) {
            model->train();
            const auto perm = torch::randperm(n_train, gen, torch::kInt64);
            for (std::int64_t b = 0; b < n_batches; ++b) {
                const auto idx = perm.slice(0, b * batch, std::min((b + 1) * batch, n_train));
                const auto xb = X_train.index_select(0, idx);
                const auto yb = y_train.index_select(0, idx);
                for (auto& p : model->parameters()) p.mutable_grad().reset();  // set_to_none=True
                auto loss = torch::nn::functional::cross_entropy(model->forward(xb), yb);
                loss.backward();
                adam.step();
            }
        };

        auto predict = [](torch::nn::Sequential& model, const torch::Tensor& x) {
            return torch::softmax(model->forward(x), 1);
        };

        torch::nn::Sequential trained{nullptr};
        for (const std::int64_t batch : {128, 32}) {
            const std::string fig = "train_epoch_b" + std::to_string(batch);
            const bool want_acc = batch == 128 && opt.want("accuracy_1epoch") && opt.fraction >= 1.0;
            if (!opt.want(fig) && !want_acc) continue;
            log(emit.system + ": " + fig + " (fraction " + std::to_string(opt.fraction) + ")");
            const auto [n_run, n_total] = epoch_batches(n_train, batch, opt.fraction);
            {  // throw-away warm-up model (allocator, oneDNN/BLAS kernels)
                auto warm = make_model();
                torch::optim::Adam wadam(warm->parameters(), torch::optim::AdamOptions(kLearnRate));
                auto wgen = at::make_generator<at::CPUGeneratorImpl>(opt.seed + 1);
                train_batches(warm, wadam, batch, 3, wgen);
            }
            torch::manual_seed(opt.seed);
            auto model = make_model();
            torch::optim::Adam adam(model->parameters(), torch::optim::AdamOptions(kLearnRate));
            auto gen = at::make_generator<at::CPUGeneratorImpl>(opt.seed);
            const auto t0 = Clock::now();
            train_batches(model, adam, batch, n_run, gen);
            const double secs = seconds(t0) * double(n_total) / double(n_run);
            if (opt.want(fig))
                emit(fig, secs, "s",
                     ", \"batches\": " + std::to_string(n_run) + ", \"batches_per_epoch\": " + std::to_string(n_total));
            if (batch == 128) {
                trained = model;
                if (want_acc) {
                    c10::InferenceMode guard;
                    model->eval();
                    std::int64_t correct = 0;
                    for (std::int64_t i = 0; i < n_test; i += 1024) {
                        const auto p = predict(model, X_test.slice(0, i, std::min(i + 1024, n_test)));
                        correct +=
                            p.argmax(1).eq(y_test.slice(0, i, std::min(i + 1024, n_test))).sum().item<std::int64_t>();
                    }
                    emit("accuracy_1epoch", double(correct) / double(n_test), "fraction");
                }
            }
        }
        if (opt.want("accuracy_1epoch") && opt.fraction < 1.0)
            log("accuracy_1epoch skipped (only measured when --fraction 1)");

        torch::nn::Sequential model = trained ? trained : make_model();
        c10::InferenceMode guard;
        model->eval();
        for (const std::int64_t batch : {128, 1024}) {
            const std::string fig = "predict10k_b" + std::to_string(batch);
            if (!opt.want(fig)) continue;
            log(emit.system + ": " + fig);
            for (std::int64_t i = 0; i < 4 * batch; i += batch) predict(model, X_test.slice(0, i, i + batch));
            const auto t0 = Clock::now();
            for (std::int64_t i = 0; i < n_test; i += batch)
                predict(model, X_test.slice(0, i, std::min(i + batch, n_test)));
            emit(fig, seconds(t0), "s");
        }
        if (opt.want("latency_b1_p50") || opt.want("latency_b1_p99")) {
            log(emit.system + ": latency_b1 (n=" + std::to_string(opt.latency_n) + ", warm-up " +
                std::to_string(opt.latency_warmup) + ")");
            for (int i = 0; i < opt.latency_warmup; ++i) predict(model, X_test.slice(0, i % n_test, i % n_test + 1));
            std::vector<double> us;
            us.reserve(std::size_t(opt.latency_n));
            for (int i = 0; i < opt.latency_n; ++i) {
                const std::int64_t j = i % n_test;
                const auto x = X_test.slice(0, j, j + 1);
                const auto t0 = Clock::now();
                const auto p = predict(model, x);
                us.push_back(seconds(t0) * 1e6);
            }
            std::sort(us.begin(), us.end());
            const std::string n = ", \"n\": " + std::to_string(opt.latency_n);
            if (opt.want("latency_b1_p50")) emit("latency_b1_p50", percentile(us, 50), "us", n);
            if (opt.want("latency_b1_p99")) emit("latency_b1_p99", percentile(us, 99), "us", n);
        }
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "libtorch_bench: %s\n", e.what());
        return 1;
    }
}
