// Within-op parallelism on the CPU: a small pool of worker threads that the matrix products
// split their work over. The number of threads is TENON_NUM_THREADS from the environment
// (read once, at first use), or the number of cores, or what set_num_threads last set.
//
// Determinism: work is split over output blocks only, never over a sum, so every value is
// computed by the same instructions in the same order whatever the thread count: results
// are bitwise identical for 1, 2 or 16 threads.
//
// Many threads may call into tenon at once (predict is const): one call at a time uses the
// pool; a call that finds the pool busy runs on its own thread instead of waiting. When
// another process holds a core (a worker lands on the caller's core, or loses its core in
// the middle of a task) the pool runs jobs on the caller alone for a while: see
// docs/performance.md, "A neighbour on the other core".
#pragma once
#include <cstddef>

namespace tenon {

// The number of threads an op may use (>= 1).
std::size_t num_threads();
// Sets it; 0 means the default (TENON_NUM_THREADS, else the number of cores).
void set_num_threads(std::size_t n);

namespace cpu {
// Runs task(i, ctx) for i in [0, n), spread over the pool and the calling thread; returns
// when all are done. With one thread, a busy pool or n == 1, runs them in order here.
using Task = void (*)(std::size_t i, void* ctx);
void parallel_run(std::size_t n, Task task, void* ctx);

// Runs f(i) for i in [0, n) as above (f is called concurrently from several threads).
template <class F>
void parallel_for(std::size_t n, F&& f) {
    parallel_run(
        n, [](std::size_t i, void* c) { (*static_cast<F*>(c))(i); }, static_cast<void*>(&f));
}

// Runs f(begin, end) over [0, n) cut into one contiguous range per thread, in order (the
// calling thread usually takes the first). For passes over data that the previous op
// split the same way: a matrix product splits C into contiguous halves too, so each core
// finds its half of a parameter still in its own cache.
template <class F>
void parallel_ranges(std::size_t n, F&& f) {
    const std::size_t parts = n < num_threads() ? n : num_threads();
    if (parts <= 1) {
        if (n) f(std::size_t{0}, n);
        return;
    }
    const std::size_t step = (n + parts - 1) / parts;
    parallel_for(parts, [&](std::size_t i) {
        const std::size_t b = i * step, e = b + step < n ? b + step : n;
        if (b < e) f(b, e);
    });
}
}  // namespace cpu

}  // namespace tenon
