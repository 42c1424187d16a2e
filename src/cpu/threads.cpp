// The worker pool behind cpu::parallel_run (see include/tenon/backend/cpu/threads.hpp).
// Workers wait for a new job by spinning briefly (a job every few microseconds is the
// common case while training or serving, and a sleeping thread takes ~10 us to wake),
// then sleep on a condition variable. The caller works on its own job too and never waits
// for a worker that has not started (on a loaded machine a worker may not run for a while).
#include "tenon/backend/cpu/threads.hpp"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tenon/error.hpp"

namespace tenon {
namespace cpu {
void prepare_worker_thread();  // src/cpu/gemm.cpp
}
namespace {

std::size_t default_threads() {
    if (const char* env = std::getenv("TENON_NUM_THREADS")) {
        char* end = nullptr;
        const long v = std::strtol(env, &end, 10);
        if (end != env && *end == '\0' && v >= 1 && v <= 1024) return static_cast<std::size_t>(v);
    }
    const unsigned hw = std::thread::hardware_concurrency();
    return hw ? hw : 1;
}

class Pool {
public:
    ~Pool() { resize(0); }

    std::size_t threads() {
        std::lock_guard<std::mutex> lock(config_);
        if (wanted_ == 0) wanted_ = default_threads();
        return wanted_;
    }
    void set_threads(std::size_t n) {
        std::lock_guard<std::mutex> lock(config_);
        wanted_ = n ? n : default_threads();
    }

    void run(std::size_t n, cpu::Task task, void* ctx) {
        const std::size_t want = threads();
        // One job at a time: a second caller (another user thread) runs on its own.
        if (n <= 1 || want <= 1 || busy_.test_and_set(std::memory_order_acquire)) {
            for (std::size_t i = 0; i < n; ++i) task(i, ctx);
            return;
        }
        if (workers_.size() != want - 1) resize(want - 1);
        task_.store(task, std::memory_order_relaxed);
        ctx_.store(ctx, std::memory_order_relaxed);
        count_.store(n, std::memory_order_relaxed);
        done_.store(0, std::memory_order_relaxed);
        const std::uint64_t gen = (ticket_.load(std::memory_order_relaxed) >> 32) + 1;
        ticket_.store(gen << 32, std::memory_order_release);  // publishes the job
        generation_.fetch_add(1, std::memory_order_seq_cst);
        // Spinning workers see the new generation; sleeping ones need the (slower) wake-up.
        if (sleepers_.load(std::memory_order_seq_cst) > 0) {
            { std::lock_guard<std::mutex> lock(mutex_); }
            wake_.notify_all();
        }
        work(gen);
        // The caller took what the workers had not: wait only for the tasks they are running
        // (a worker that wakes late finds nothing left and touches nothing).
        while (done_.load(std::memory_order_acquire) != n) cpu_relax();
        busy_.clear(std::memory_order_release);
    }

private:
    static void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#else
        std::this_thread::yield();
#endif
    }
    // Takes task indices of job `gen` until none is left. ticket_ holds (generation << 32 |
    // next index); a compare-exchange takes an index only while the job is still `gen`, so a
    // worker that read an old generation can never run a task of a later job. task_, ctx_ and
    // count_ are read before the exchange and belong to `gen` when it succeeds (they are
    // rewritten only after every task of `gen` is done).
    void work(std::uint64_t gen) {
        for (;;) {
            std::uint64_t t = ticket_.load(std::memory_order_acquire);
            if ((t >> 32) != gen) return;
            const cpu::Task task = task_.load(std::memory_order_relaxed);
            void* const ctx = ctx_.load(std::memory_order_relaxed);
            const std::size_t count = count_.load(std::memory_order_relaxed);
            const std::size_t i = t & 0xffffffffu;
            if (i >= count) return;
            if (!ticket_.compare_exchange_weak(t, t + 1, std::memory_order_acq_rel)) continue;
            task(i, ctx);
            done_.fetch_add(1, std::memory_order_acq_rel);
        }
    }
    // `seen` is the generation when the worker was made: a job posted before the thread gets
    // to run is still seen as new.
    void worker_loop(std::size_t seen) {
        cpu::prepare_worker_thread();
        ready_.fetch_add(1, std::memory_order_release);
        for (;;) {
            std::size_t g = seen;
            for (int spin = 0; spin < 4000 && g == seen; ++spin) {  // ~100 us
                cpu_relax();
                g = generation_.load(std::memory_order_acquire);
            }
            if (g == seen) {
                std::unique_lock<std::mutex> lock(mutex_);
                sleepers_.fetch_add(1, std::memory_order_seq_cst);
                wake_.wait(lock, [&] { return generation_.load(std::memory_order_seq_cst) != seen; });
                sleepers_.fetch_sub(1, std::memory_order_relaxed);
                g = generation_.load(std::memory_order_acquire);
            }
            seen = g;
            if (stop_.load(std::memory_order_acquire)) return;
            work(ticket_.load(std::memory_order_acquire) >> 32);
        }
    }
    // Called with no job running (busy_ held, or from the destructor).
    void resize(std::size_t n) {
        if (!workers_.empty()) {
            stop_.store(true, std::memory_order_release);
            {
                std::lock_guard<std::mutex> lock(mutex_);
                generation_.fetch_add(1, std::memory_order_release);
            }
            wake_.notify_all();
            for (auto& t : workers_) t.join();
            workers_.clear();
            stop_.store(false, std::memory_order_release);
        }
        const std::size_t g = generation_.load(std::memory_order_acquire);
        ready_.store(0, std::memory_order_relaxed);
        for (std::size_t i = 0; i < n; ++i) workers_.emplace_back([this, g] { worker_loop(g); });
        // The new workers have made their scratch memory before the first job (no allocation
        // after the pool is up: tests/unit/test_alloc.cpp).
        while (ready_.load(std::memory_order_acquire) != n) std::this_thread::yield();
    }

    std::mutex config_;
    std::size_t wanted_ = 0;
    std::atomic_flag busy_ = ATOMIC_FLAG_INIT;
    std::vector<std::thread> workers_;
    std::mutex mutex_;
    std::condition_variable wake_;
    std::atomic<std::size_t> generation_{0};
    std::atomic<int> sleepers_{0};  // workers waiting on wake_
    std::atomic<std::size_t> ready_{0};  // new workers that have prepared their scratch
    std::atomic<bool> stop_{false};
    // The current job: written by the caller before it publishes the job in ticket_.
    // (Atomic because a late worker may read them while the next job is being written; the
    // values that matter are ordered by ticket_'s release/acquire.)
    std::atomic<cpu::Task> task_{nullptr};
    std::atomic<void*> ctx_{nullptr};
    std::atomic<std::size_t> count_{0};
    std::atomic<std::uint64_t> ticket_{0};
    std::atomic<std::size_t> done_{0};
};

Pool& pool() {
    static Pool p;
    return p;
}

}  // namespace

std::size_t num_threads() { return pool().threads(); }
void set_num_threads(std::size_t n) { pool().set_threads(n); }

namespace cpu {
void parallel_run(std::size_t n, Task task, void* ctx) { pool().run(n, task, ctx); }
}  // namespace cpu

}  // namespace tenon
