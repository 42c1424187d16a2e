// The worker pool behind cpu::parallel_run (see include/tenon/backend/cpu/threads.hpp).
// Workers wait for a new job by spinning briefly (a job every few microseconds is the
// common case while training or serving, and a sleeping thread takes ~10 us to wake),
// then sleep on a condition variable.
#include "tenon/backend/cpu/threads.hpp"

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tenon/error.hpp"

namespace tenon {
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
        task_ = task;
        ctx_ = ctx;
        count_ = n;
        next_.store(0, std::memory_order_relaxed);
        pending_.store(workers_.size(), std::memory_order_relaxed);
        {
            std::lock_guard<std::mutex> lock(mutex_);
            generation_.fetch_add(1, std::memory_order_release);
        }
        wake_.notify_all();
        work();
        // Every worker has left the job before the next one can start.
        while (pending_.load(std::memory_order_acquire) != 0) std::this_thread::yield();
        busy_.clear(std::memory_order_release);
    }

private:
    void work() {
        for (std::size_t i; (i = next_.fetch_add(1, std::memory_order_relaxed)) < count_;) task_(i, ctx_);
    }
    // `seen` is the generation when the worker was made: a job posted before the thread gets
    // to run is still seen as new.
    void worker_loop(std::size_t seen) {
        for (;;) {
            std::size_t g = 0;
            for (int spin = 0; spin < 20000; ++spin) {
                g = generation_.load(std::memory_order_acquire);
                if (g != seen) break;
                if (spin > 100) std::this_thread::yield();
            }
            if (g == seen) {
                std::unique_lock<std::mutex> lock(mutex_);
                wake_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
                g = generation_.load(std::memory_order_acquire);
            }
            seen = g;
            if (stop_.load(std::memory_order_acquire)) return;
            work();
            pending_.fetch_sub(1, std::memory_order_acq_rel);
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
        for (std::size_t i = 0; i < n; ++i) workers_.emplace_back([this, g] { worker_loop(g); });
    }

    std::mutex config_;
    std::size_t wanted_ = 0;
    std::atomic_flag busy_ = ATOMIC_FLAG_INIT;
    std::vector<std::thread> workers_;
    std::mutex mutex_;
    std::condition_variable wake_;
    std::atomic<std::size_t> generation_{0};
    std::atomic<bool> stop_{false};
    // The current job (written before generation_ is bumped, read after it is seen).
    cpu::Task task_ = nullptr;
    void* ctx_ = nullptr;
    std::size_t count_ = 0;
    std::atomic<std::size_t> next_{0};
    std::atomic<std::size_t> pending_{0};
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
