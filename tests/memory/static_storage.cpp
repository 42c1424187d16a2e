// A model and arrays with static storage duration, and thread_local arrays that outlive
// their thread's block cache: at exit they are freed after the cache (src/alloc.cpp) is
// destroyed. Built with AddressSanitizer (tests/memory/meson.build); must exit cleanly, with
// the cache on (its blocks poisoned) as in a release build. Issue 16, item 1.
#include <cstdio>
#include <thread>

#include "tenon/tenon.hpp"

using namespace tenon;

static auto g_model = Relu<64, 32>() >> Softmax<4>();
static Floats2d g_array;
thread_local Floats2d t_array;  // constructed before the main thread's cache: destroyed after it

int main() {
    (void)t_array.size();  // construct it now, before the first array allocation of the thread
    detail::set_array_cache(true);
    g_model.initialize();
    Floats2d X({8, 32});
    for (std::size_t i = 0; i < X.size(); ++i) X[i] = static_cast<float>(i % 7) / 7.0f;
    float sum = 0;
    for (int i = 0; i < 3; ++i) {
        Floats2d P = g_model.predict(X);  // frees into the cache
        sum += P(0, 0);
    }
    g_array = Floats2d({100, 100});
    t_array = Floats2d({64, 64});
    Floats2d spare({64, 64});  // a block in the cache when the thread ends
    {
        Floats2d tmp({8, 32});
    }
    std::thread worker([] {
        thread_local Floats2d w;  // constructed before the worker's cache
        (void)w.size();
        Floats2d a({16, 16});
        w = Floats2d({32, 32});
    });
    worker.join();
    std::printf("static storage: ok (%g)\n", static_cast<double>(sum));
    return 0;
}
