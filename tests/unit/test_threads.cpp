// Threads: the worker pool runs every task once; many user threads predicting on one
// shared model get the bits one thread gets (predict is const and keeps no state in the
// model); training is bitwise reproducible for a seed, and the same for any thread count
// (the products split C, never a sum). `make test-tsan` runs this program under
// ThreadSanitizer.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <csignal>
#include <thread>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include "tenon/backend/cpu/threads.hpp"
#include "tenon/tenon.hpp"
#include "unit/helpers.hpp"

using namespace tenon;
using testing::random_array;

namespace {
auto make_mlp() { return Relu<64>({.dropout = 0.2}) >> Relu<64>({.dropout = 0.2}) >> Softmax<10>(); }

template <class A>
bool same_bits(const A& a, const A& b) {
    return a.shape() == b.shape() && std::equal(a.begin(), a.end(), b.begin());
}

// The parameters after `steps` Adam steps from seed 0.
std::vector<float> train(std::size_t threads, std::size_t steps) {
    set_num_threads(threads);
    fix_random_seed(0);
    auto model = make_mlp();
    const Floats2d X = random_array(96, 40, 5);
    Floats2d Y({96, 10});
    for (std::size_t i = 0; i < 96; ++i) Y(i, i % 10) = 1.0f;
    model.initialize(X, Y);
    Optimizer opt = Adam(0.01);
    for (std::size_t s = 0; s < steps; ++s) {
        auto [P, backprop] = model.begin_update(X);
        backprop(CategoricalCrossentropy().get_grad(P, Y));
        model.finish_update(opt);
    }
    std::vector<float> out;
    for (Node* n : model.walk())
        for (const auto& p : n->param_names())
            if (n->has_param(p))
                for (float v : n->get_param(p)) out.push_back(v);
    set_num_threads(0);
    return out;
}
}  // namespace

TEST_CASE("parallel_for runs every index exactly once", "[threads]") {
    for (std::size_t threads : {1, 2, 4}) {
        set_num_threads(threads);
        CHECK(num_threads() == threads);
        for (std::size_t n : {0, 1, 2, 3, 17, 1000}) {
            std::vector<std::atomic<int>> hits(n);
            cpu::parallel_for(n, [&](std::size_t i) { hits[i].fetch_add(1); });
            for (std::size_t i = 0; i < n; ++i) CHECK(hits[i].load() == 1);
            // parallel_ranges: one contiguous range per thread (at most), covering [0, n) once
            std::vector<std::atomic<int>> covered(n);
            std::atomic<std::size_t> ranges{0}, empty{0};  // (Catch's CHECK is not thread-safe)
            cpu::parallel_ranges(n, [&](std::size_t b, std::size_t e) {
                if (!(b < e)) empty.fetch_add(1);
                ranges.fetch_add(1);
                for (std::size_t i = b; i < e; ++i) covered[i].fetch_add(1);
            });
            for (std::size_t i = 0; i < n; ++i) CHECK(covered[i].load() == 1);
            CHECK(empty.load() == 0);
            CHECK(ranges.load() <= std::min(n, threads));
            CHECK((ranges.load() > 0) == (n > 0));
        }
    }
    set_num_threads(0);
    CHECK(num_threads() >= 1);
}

TEST_CASE("16 threads predicting on one model get one thread's bits", "[threads]") {
    auto model = make_mlp();
    const Floats2d X = random_array(33, 40, 1);
    model.initialize(X);
    // One thread's results for batches of 1, 4 and 33 rows (each takes its own path through
    // the matrix product, so each has its own reference).
    auto first_rows = [&](std::size_t rows) {
        Floats2d Xs({rows, 40}, uninitialized);
        std::copy(X.begin(), X.begin() + rows * 40, Xs.begin());
        return Xs;
    };
    const std::size_t sizes[] = {1, 4, 33};
    std::vector<Floats2d> inputs, want;
    for (std::size_t rows : sizes) {
        inputs.push_back(first_rows(rows));
        want.push_back(model.predict(inputs.back()));
    }
    std::atomic<int> mismatches{0};
    std::vector<std::thread> pool;
    for (int t = 0; t < 16; ++t)
        pool.emplace_back([&, t] {
            for (int r = 0; r < 20; ++r) {
                const std::size_t which = static_cast<std::size_t>(t + r) % 3;
                if (!same_bits(model.predict(inputs[which]), want[which])) mismatches.fetch_add(1);
            }
        });
    for (auto& th : pool) th.join();
    CHECK(mismatches.load() == 0);
}

TEST_CASE("training is bitwise reproducible, on any number of threads", "[threads][determinism]") {
    const auto a = train(2, 5), b = train(2, 5);
    CHECK(a == b);
    CHECK(train(1, 5) == a);
    CHECK(train(3, 5) == a);
}

// A neighbour process keeping every core busy makes the pool back off (run jobs on the
// caller alone for a while, workers asleep) and come back: whichever it does, every task
// still runs exactly once and training keeps the bits of a quiet machine.
TEST_CASE("with every core taken by another process, jobs and training are unchanged",
          "[threads][determinism]") {
    const auto quiet = train(2, 5);
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    std::vector<pid_t> spinners;
    for (unsigned c = 0; c < cores; ++c) {
        const pid_t pid = fork();
        if (pid == 0) {
            volatile unsigned long spin = 0;
            for (;;) spin = spin + 1;
        }
        REQUIRE(pid > 0);
        spinners.push_back(pid);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    set_num_threads(2);
    std::size_t wrong = 0;
    for (int job = 0; job < 3000; ++job) {
        const std::size_t n = 2 + static_cast<std::size_t>(job % 7);
        std::vector<std::atomic<int>> hits(n);
        cpu::parallel_for(n, [&](std::size_t i) {
            volatile float x = 0;  // a few microseconds of work per task
            for (int k = 0; k < 2000; ++k) x = x + 1.0f;
            hits[i].fetch_add(1);
        });
        for (std::size_t i = 0; i < n; ++i) wrong += hits[i].load() != 1;
    }
    const auto loaded = train(2, 5);
    for (pid_t pid : spinners) {
        kill(pid, SIGKILL);
        waitpid(pid, nullptr, 0);
    }
    set_num_threads(0);
    CHECK(wrong == 0);
    CHECK(loaded == quiet);
}
