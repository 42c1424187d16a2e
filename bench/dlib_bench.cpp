// dlib anchor for `make bench`: the Fashion-MNIST MLP of bench/bench_torch.py in dlib's DNN API,
// timed with the protocol of bench/anchor_common.py.
//
// Model: fc<512> relu dropout(0.2) fc<512> relu dropout(0.2) fc<10>, loss_multiclass_log,
// adam (lr 0.001, beta1 0.9, beta2 0.999, weight decay 0 -- dlib's default solver has 0.0005).
// Where dlib differs from the PyTorch/Thinc anchors (library behaviour, kept as is):
//  - loss_multiclass_log applies the softmax itself (like PyTorch's CrossEntropyLoss): the
//    net ends at the fc<10> logits and the gradient is (softmax - onehot) / batch_size.
//  - dropout_ is not "inverted": it zeroes units at training time without rescaling, and the
//    inference net replaces it by multiply_(0.8) -- dlib's documented way (dropout_ would
//    drop at inference too). The extra multiply is part of dlib's prediction cost.
//  - initialisation is dlib's own (fc: uniform +-sqrt(6/(n_in+n_out)), biases 0), as each
//    other anchor uses its library's default; adam's epsilon placement is dlib's.
// Training uses net.compute_parameter_gradients(tensor) + update_parameters() directly on one
// thread: dnn_trainer would add a second thread for data preparation (and loss bookkeeping),
// which a 1-thread anchor must not use. Each batch is gathered straight into a tensor (the
// counterpart of PyTorch's X[idx]). Prediction (predict10k, batch-1 latency) runs the
// inference net's forward pass and the softmax, so it returns probabilities like the others.
//
//   dlib_bench [--fraction F] [--latency-n N] [--latency-warmup N] [--figures a,b]
//              [--threads N (1: one BLAS thread; 0: library default)] [--seed S]
// Prints JSON lines {"figure", "system", "value", "unit", "threads"}; system "dlib" for
// --threads 1, "dlib-mt" for 0, "dlib-tN" otherwise.
#include <dlib/dnn.h>
#include <dlib/revision.h>
#include <zlib.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {
using Clock = std::chrono::steady_clock;
constexpr float kDropout = 0.2f;
constexpr float kLearnRate = 0.001f;
constexpr long kRows = 28, kCols = 28, kWidth = kRows * kCols;
const char* const kAllFigures[] = {"train_epoch_b128", "train_epoch_b32", "predict10k_b128", "predict10k_b1024",
                                   "latency_b1_p50",   "latency_b1_p99",  "accuracy_1epoch"};

using Input = dlib::input<dlib::matrix<float>>;
using TrainNet = dlib::loss_multiclass_log<
    dlib::fc<10, dlib::dropout<dlib::relu<dlib::fc<512, dlib::dropout<dlib::relu<dlib::fc<512, Input>>>>>>>>;
using InferNet = dlib::loss_multiclass_log<
    dlib::fc<10, dlib::multiply<dlib::relu<dlib::fc<512, dlib::multiply<dlib::relu<dlib::fc<512, Input>>>>>>>>;

struct Options {
    double fraction = 1.0;
    int latency_n = 2000;
    int latency_warmup = 200;
    int threads = 0;
    unsigned seed = 0;
    std::set<std::string> figures;
    bool want(const std::string& f) const { return figures.count(f) != 0; }
};

[[noreturn]] void usage(const char* why) {
    std::fprintf(stderr,
                 "dlib_bench: %s\nusage: dlib_bench [--fraction F] [--latency-n N] [--latency-warmup N] "
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
        else if (a == "--seed") o.seed = unsigned(std::strtoul(next().c_str(), nullptr, 10));
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

// OpenBLAS sizes its thread pool from the environment when it is loaded, i.e. before main();
// like anchor_common.setup_threads(), pin it by re-executing ourselves with the variables set.
void pin_threads_or_reexec(int threads, char** argv) {
    if (threads <= 0) return;
    const std::string n = std::to_string(threads);
    const char* cur = std::getenv("OPENBLAS_NUM_THREADS");
    if (cur && n == cur) return;
    for (const char* var : {"OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS"})
        setenv(var, n.c_str(), 1);
    execv("/proc/self/exe", argv);
    std::perror("dlib_bench: execv /proc/self/exe (continuing without pinned BLAS threads)");
}

std::string system_name(int threads) {
    return threads == 1 ? "dlib" : threads <= 0 ? "dlib-mt" : "dlib-t" + std::to_string(threads);
}

struct Emitter {
    std::string system;
    std::string threads;  // JSON value
    void operator()(const std::string& figure, double value, const char* unit, const std::string& extra = "") const {
        std::printf("{\"figure\": \"%s\", \"system\": \"%s\", \"value\": %.9g, \"unit\": \"%s\", \"threads\": %s%s}\n",
                    figure.c_str(), system.c_str(), value, unit, threads.c_str(), extra.c_str());
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

struct Split {
    std::vector<float> X;  // (n, 784) row-major, in [0, 1]
    std::vector<unsigned long> y;
    long n = 0;
    const float* row(long i) const { return X.data() + i * kWidth; }
};

Split load_split(const std::string& split) {
    std::vector<std::uint32_t> dx, dy;
    const auto px = read_idx(data_dir() + "/" + split + "-images-idx3-ubyte.gz", 2051, dx);
    const auto py = read_idx(data_dir() + "/" + split + "-labels-idx1-ubyte.gz", 2049, dy);
    if (dx[0] != dy[0] || long(dx[1] * dx[2]) != kWidth) throw std::runtime_error(split + ": unexpected IDX shapes");
    Split s;
    s.n = long(dx[0]);
    s.X.resize(px.size());
    std::transform(px.begin(), px.end(), s.X.begin(), [](std::uint8_t v) { return float(v) / 255.0f; });
    s.y.assign(py.begin(), py.end());
    return s;
}

// --------------------------------------------------------------------------- timing helpers
double seconds(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// anchor_common.epoch_batches: (batches run for `fraction` of an epoch, batches per epoch);
// nearbyint rounds half to even, as Python's round().
std::pair<long, long> epoch_batches(long n, long batch, double fraction) {
    const long total = (n + batch - 1) / batch;
    if (fraction >= 1.0) return {total, total};
    return {std::clamp(long(std::nearbyint(double(total) * fraction)), 1L, total), total};
}

// anchor_common.percentile: nearest rank on an ascending list.
double percentile(const std::vector<double>& sorted, double q) {
    const long k = long(std::ceil(q / 100.0 * double(sorted.size()))) - 1;
    return sorted[std::size_t(std::clamp(k, 0L, long(sorted.size()) - 1))];
}

// Rows [begin, end) of X (or the rows idx[begin..end)) into x, shaped as Input::to_tensor would.
void gather(const Split& s, const long* idx, long begin, long end, dlib::resizable_tensor& x) {
    x.set_size(end - begin, 1, kRows, kCols);
    float* out = x.host_write_only();
    for (long i = begin; i < end; ++i, out += kWidth) std::memcpy(out, s.row(idx ? idx[i] : i), sizeof(float) * kWidth);
}

TrainNet make_net(const Split& train) {
    TrainNet net;
    dlib::visit_computational_layers(net, [](dlib::dropout_& d) { d = dlib::dropout_(kDropout); });
    // One to_tensor() call sets the input layer's sample expansion factor that the tensor
    // overloads below rely on.
    dlib::matrix<float> one(kRows, kCols);
    std::copy(train.row(0), train.row(0) + kWidth, one.begin());
    dlib::resizable_tensor t;
    net.to_tensor(&one, &one + 1, t);
    return net;
}

// dlib's adam: one solver per computational layer; weight decay 0 as in the other anchors.
std::vector<dlib::adam> make_solvers() {
    return std::vector<dlib::adam>(TrainNet::num_computational_layers, dlib::adam(0.0f, 0.9f, 0.999f));
}
}  // namespace

int main(int argc, char** argv) {
    const Options opt = parse(argc, argv);
    pin_threads_or_reexec(opt.threads, argv);
    const Emitter emit{system_name(opt.threads), opt.threads > 0 ? std::to_string(opt.threads) : "\"default\""};
    auto log = [&](const std::string& msg) { std::fprintf(stderr, "[dlib_bench] %s\n", msg.c_str()); };

    try {
        std::srand(opt.seed);  // dlib seeds fc initialisation and dropout masks from std::rand()
        log("loading Fashion-MNIST from " + data_dir() + " (dlib " + std::to_string(DLIB_MAJOR_VERSION) + "." +
            std::to_string(DLIB_MINOR_VERSION) + ")");
        const Split train = load_split("train"), test = load_split("t10k");

        dlib::resizable_tensor xb;
        auto train_batches = [&](TrainNet& net, std::vector<dlib::adam>& solvers, long batch, long n_batches,
                                 unsigned seed) {
            std::vector<long> perm(std::size_t(train.n));
            std::iota(perm.begin(), perm.end(), 0L);
            std::shuffle(perm.begin(), perm.end(), std::mt19937_64(seed));
            std::vector<unsigned long> yb;
            for (long b = 0; b < n_batches; ++b) {
                const long begin = b * batch, end = std::min(begin + batch, train.n);
                gather(train, perm.data(), begin, end, xb);
                yb.clear();
                for (long i = begin; i < end; ++i) yb.push_back(train.y[std::size_t(perm[std::size_t(i)])]);
                net.compute_parameter_gradients(xb, yb.begin());
                net.update_parameters(solvers, kLearnRate);
            }
        };

        // Inference: the net with dropout turned into multiply, forward to the logits, softmax.
        dlib::resizable_tensor probs;
        auto predict = [&](InferNet& net, const dlib::tensor& x) -> const dlib::tensor& {
            const dlib::tensor& logits = net.subnet().forward(x);
            probs.copy_size(logits);
            dlib::tt::softmax(probs, logits);
            return probs;
        };

        std::unique_ptr<InferNet> infer;
        for (const long batch : {128L, 32L}) {
            const std::string fig = "train_epoch_b" + std::to_string(batch);
            const bool want_acc = batch == 128 && opt.want("accuracy_1epoch") && opt.fraction >= 1.0;
            if (!opt.want(fig) && !want_acc) continue;
            log(emit.system + ": " + fig + " (fraction " + std::to_string(opt.fraction) + ")");
            const auto [n_run, n_total] = epoch_batches(train.n, batch, opt.fraction);
            {  // throw-away warm-up net (allocations, BLAS buffers)
                TrainNet warm = make_net(train);
                auto wsolvers = make_solvers();
                train_batches(warm, wsolvers, batch, 3, opt.seed + 1);
            }
            std::srand(opt.seed);
            TrainNet net = make_net(train);
            auto solvers = make_solvers();
            const auto t0 = Clock::now();
            train_batches(net, solvers, batch, n_run, opt.seed);
            const double secs = seconds(t0) * double(n_total) / double(n_run);
            if (opt.want(fig))
                emit(fig, secs, "s",
                     ", \"batches\": " + std::to_string(n_run) + ", \"batches_per_epoch\": " + std::to_string(n_total));
            if (batch == 128) {
                infer = std::make_unique<InferNet>(net);
                if (want_acc) {
                    long correct = 0;
                    for (long i = 0; i < test.n; i += 1024) {
                        const long end = std::min(i + 1024, test.n);
                        gather(test, nullptr, i, end, xb);
                        const float* p = predict(*infer, xb).host();
                        for (long r = i; r < end; ++r, p += 10)
                            correct += long(std::max_element(p, p + 10) - p) == long(test.y[std::size_t(r)]);
                    }
                    emit("accuracy_1epoch", double(correct) / double(test.n), "fraction");
                }
            }
        }
        if (opt.want("accuracy_1epoch") && opt.fraction < 1.0)
            log("accuracy_1epoch skipped (only measured when --fraction 1)");

        if (!infer) {
            TrainNet fresh = make_net(train);
            gather(test, nullptr, 0, 1, xb);
            fresh.subnet().forward(xb);  // fc layers allocate their parameters on the first forward
            infer = std::make_unique<InferNet>(fresh);
        }
        // The test set as one tensor: batches are zero-copy alias_tensor views of it, the
        // counterpart of the other anchors' X[i:i + b] slices.
        dlib::resizable_tensor X_test;
        gather(test, nullptr, 0, test.n, X_test);
        auto rows = [&](long begin, long end) {
            return dlib::alias_tensor(end - begin, 1, kRows, kCols)(X_test, begin * kWidth);
        };
        for (const long batch : {128L, 1024L}) {
            const std::string fig = "predict10k_b" + std::to_string(batch);
            if (!opt.want(fig)) continue;
            log(emit.system + ": " + fig);
            for (long i = 0; i < 4 * batch; i += batch) predict(*infer, rows(i, i + batch));
            const auto t0 = Clock::now();
            for (long i = 0; i < test.n; i += batch) predict(*infer, rows(i, std::min(i + batch, test.n)));
            emit(fig, seconds(t0), "s");
        }
        if (opt.want("latency_b1_p50") || opt.want("latency_b1_p99")) {
            log(emit.system + ": latency_b1 (n=" + std::to_string(opt.latency_n) + ", warm-up " +
                std::to_string(opt.latency_warmup) + ")");
            for (int i = 0; i < opt.latency_warmup; ++i) predict(*infer, rows(i % test.n, i % test.n + 1));
            std::vector<double> us;
            us.reserve(std::size_t(opt.latency_n));
            for (int i = 0; i < opt.latency_n; ++i) {
                const long j = i % test.n;
                const auto x = rows(j, j + 1);
                const auto t0 = Clock::now();
                predict(*infer, x);
                us.push_back(seconds(t0) * 1e6);
            }
            std::sort(us.begin(), us.end());
            const std::string n = ", \"n\": " + std::to_string(opt.latency_n);
            if (opt.want("latency_b1_p50")) emit("latency_b1_p50", percentile(us, 50), "us", n);
            if (opt.want("latency_b1_p99")) emit("latency_b1_p99", percentile(us, 99), "us", n);
        }
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "dlib_bench: %s\n", e.what());
        return 1;
    }
}
