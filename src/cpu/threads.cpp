// The worker pool behind cpu::parallel_run (see include/tenon/backend/cpu/threads.hpp).
// Workers wait for a new job by spinning briefly (a job every few microseconds is the
// common case while training or serving, and a sleeping thread takes ~10 us to wake),
// then sleep on a condition variable. The caller works on its own job too and never waits
// for a worker that has not started (on a loaded machine a worker may not run for a while).
#include "tenon/backend/cpu/threads.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <sched.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif
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
        // Backing off: a recent job was slowed by another process (see note_crowding).
        if (solo_.load(std::memory_order_relaxed)) {
            if (Clock::now() < solo_until_) {
                busy_.clear(std::memory_order_release);
                for (std::size_t i = 0; i < n; ++i) task(i, ctx);
                return;
            }
            solo_.store(false, std::memory_order_relaxed);
        }
        const std::uint64_t start = ticks();
        caller_cpu_.store(sched_getcpu(), std::memory_order_relaxed);
        if (workers_.size() != want - 1) resize(want - 1);
        const std::uint64_t gen = (ticket_.load(std::memory_order_relaxed) >> 32) + 1;
        // Closes the last job before its task, context and count are rewritten: a worker that
        // read its ticket when every index was taken (index == its count) and then reads the
        // new, larger count must not take that index (see work).
        ticket_.store(gen << 32 | kClosed, std::memory_order_relaxed);
        task_.store(task, std::memory_order_relaxed);
        ctx_.store(ctx, std::memory_order_relaxed);
        count_.store(n, std::memory_order_release);
        done_.store(0, std::memory_order_relaxed);
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
        const std::uint64_t own_end = ticks();
        while (done_.load(std::memory_order_acquire) != n) cpu_relax();
        note_crowding(start, own_end);
        busy_.clear(std::memory_order_release);
    }

private:
    using Clock = std::chrono::steady_clock;

    // When another process holds a core, a worker is either preempted in the middle of a task
    // (the caller waits for it a whole time slice) or moved onto the caller's core, where it
    // runs only while the caller does not (and its spinning for the next job takes the
    // caller's time). Both make a call many times slower than running alone, so after either
    // the pool runs jobs on the caller alone for a while, with the workers asleep: 50 us at
    // first, twice as long at each repeat, up to 64 ms; each job that goes well halves the
    // next back-off. One stray delay on a quiet machine costs a few calls; a lasting
    // neighbour costs one probe every 64 ms. Results do not change: every value is computed
    // the same way on any thread.
    void note_crowding(std::uint64_t start, std::uint64_t own_end) {
        // A worker's task is about the size of the caller's share: one that ends much later
        // than the caller's own work lost its core.
        const std::uint64_t end = ticks();
        const bool late = end - own_end > (own_end - start) + kLateTicks;
        const bool crowded = crowded_.load(std::memory_order_relaxed);
        if (!late && !crowded) {
            backoff_ /= 2;
            return;
        }
        if (crowded) crowded_.store(false, std::memory_order_relaxed);
        backoff_ = std::min(std::max(backoff_ * 2, Clock::duration(std::chrono::microseconds(50))),
                            Clock::duration(std::chrono::milliseconds(64)));
        solo_until_ = Clock::now() + backoff_;
        solo_.store(true, std::memory_order_relaxed);
    }

    // A cheap clock for the per-job timing: the time-stamp counter on x86-64 (a few ns, where
    // steady_clock costs ~20 ns per read on every job), nanoseconds elsewhere.
#if defined(__x86_64__) || defined(__i386__)
    static std::uint64_t ticks() { return __rdtsc(); }
    static constexpr std::uint64_t kLateTicks = 60000;  // 15-30 us at 2-4 GHz
#else
    static std::uint64_t ticks() {
        return static_cast<std::uint64_t>(Clock::now().time_since_epoch() / std::chrono::nanoseconds(1));
    }
    static constexpr std::uint64_t kLateTicks = 20000;  // 20 us
#endif

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
    // count_ are read before the exchange and belong to `gen` when it succeeds: they are
    // rewritten only after every task of `gen` is done, and after ticket_ was closed (run),
    // so that a count read here from the next job (acquire: the closing store is then seen)
    // leaves the exchange of an old ticket to fail. (Without the closing store, a ticket read
    // at the end of a job, index == its count, could be exchanged against a larger count
    // being written for the next job: that task ran before its job was published, ran twice,
    // and its extra count in done_ let the caller return while a task still ran.)
    void work(std::uint64_t gen) {
        for (;;) {
            std::uint64_t t = ticket_.load(std::memory_order_acquire);
            if ((t >> 32) != gen) return;
            const cpu::Task task = task_.load(std::memory_order_relaxed);
            void* const ctx = ctx_.load(std::memory_order_relaxed);
            const std::size_t count = count_.load(std::memory_order_acquire);
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
        bool crowded = false;
        for (;;) {
            std::size_t g = seen;
            // Spins ~100 us for the next job, unless the pool is backing off or this thread
            // shares the caller's core (see note_crowding).
            for (int spin = 0; spin < 4000 && g == seen && !crowded && !solo_.load(std::memory_order_relaxed); ++spin) {
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
            // On the caller's core this thread runs only while the caller does not.
            crowded = sched_getcpu() == caller_cpu_.load(std::memory_order_relaxed);
            if (crowded) {
                crowded_.store(true, std::memory_order_relaxed);
                continue;
            }
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
    std::atomic<int> sleepers_{0};  // workers waiting on wake_
    std::atomic<std::size_t> ready_{0};  // new workers that have prepared their scratch
    std::atomic<bool> stop_{false};
    // Written only by the caller holding busy_ (ordered by busy_'s acquire/release).
    Clock::duration backoff_{0};
    Clock::time_point solo_until_{};
    // The hot atomics, one cache line per writer's pattern: a spinning worker polls the first
    // (the caller writes it once a job), the caller writes the second while it sets a job up
    // (the workers read it once a job), and the third is what a task's end writes and the
    // caller polls. (Sharing lines here cost ~1 us per batch-1 predict: the caller's stores
    // bounced the line that the worker's spin kept reading.)
    alignas(64) std::atomic<std::size_t> generation_{0};
    std::atomic<bool> solo_{false};  // backing off: workers sleep instead of spinning
    // The current job: written by the caller before it publishes the job in ticket_.
    // (Atomic because a late worker may read them while the next job is being written; the
    // values that matter are ordered by ticket_'s release/acquire.)
    alignas(64) std::atomic<cpu::Task> task_{nullptr};
    std::atomic<void*> ctx_{nullptr};
    std::atomic<std::size_t> count_{0};
    std::atomic<std::uint64_t> ticket_{0};
    static constexpr std::uint64_t kClosed = 0xffffffffu;  // an index no job reaches
    std::atomic<int> caller_cpu_{-1};
    alignas(64) std::atomic<std::size_t> done_{0};
    std::atomic<bool> crowded_{false};  // a worker found itself on the caller's core
    // (the class's size is a multiple of 64: nothing else shares this line)
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
