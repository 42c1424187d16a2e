// No heap allocation after warm-up: once a model has run a batch size, predict and a
// training step (begin_update, backprop, finish_update) reuse memory they already have
// (arrays come from the thread's cache of blocks, src/alloc.cpp). This program replaces the
// global operator new/delete and malloc/calloc/realloc/free and counts the calls made while
// the counter is on: 10,000 batch-1 predicts and 100 training steps must make none.
// Under AddressSanitizer (make test-sanitize), whose runtime owns malloc and calls it before
// any replacement could run, the counter is ASan's own allocation hook instead
// (__sanitizer_install_malloc_and_free_hooks, which sees every malloc and operator new), and
// the block cache, off by default there, is turned on for this program: the same checks run.
#include <catch2/catch.hpp>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <new>

#include "tenon/tenon.hpp"
#include "unit/helpers.hpp"

#if TENON_ASAN
// (from compiler-rt's <sanitizer/allocator_interface.h>, which GCC does not install; GCC's
// libasan has the function)
extern "C" int __sanitizer_install_malloc_and_free_hooks(void (*malloc_hook)(const volatile void*, std::size_t),
                                                         void (*free_hook)(const volatile void*));
#else
extern "C" {
void* __libc_malloc(std::size_t);
void* __libc_calloc(std::size_t, std::size_t);
void* __libc_realloc(void*, std::size_t);
void* __libc_memalign(std::size_t, std::size_t);
void __libc_free(void*);
}
#endif

namespace {
std::atomic<bool> counting{false};
std::atomic<long> allocations{0};
const bool trap = std::getenv("TENON_ALLOC_TRAP") != nullptr;  // to find one: run under gdb
inline void note() {
    if (counting.load(std::memory_order_relaxed)) {
        allocations.fetch_add(1, std::memory_order_relaxed);
        if (trap) __builtin_trap();
    }
}
struct Count {
    Count() {
        allocations = 0;
        counting = true;
    }
    long stop() {
        counting = false;
        return allocations.load();
    }
};
}  // namespace

#if TENON_ASAN
namespace {
void asan_malloc_hook(const volatile void*, std::size_t) { note(); }
void asan_free_hook(const volatile void*) {}
[[maybe_unused]] const bool asan_setup = [] {
    __sanitizer_install_malloc_and_free_hooks(asan_malloc_hook, asan_free_hook);
    tenon::detail::set_array_cache(true);  // off by default under ASan (src/alloc.cpp)
    return true;
}();
}  // namespace
#else
// The C allocator (every C++ allocation ends here too, but count both layers' entry points).
extern "C" {
void* malloc(std::size_t n) {
    note();
    return __libc_malloc(n);
}
void* calloc(std::size_t a, std::size_t b) {
    note();
    return __libc_calloc(a, b);
}
void* realloc(void* p, std::size_t n) {
    note();
    return __libc_realloc(p, n);
}
void* aligned_alloc(std::size_t al, std::size_t n) {
    note();
    return __libc_memalign(al, n);
}
int posix_memalign(void** out, std::size_t al, std::size_t n) {
    note();
    *out = __libc_memalign(al, n);
    return *out ? 0 : 12;
}
void free(void* p) { __libc_free(p); }
}
void* operator new(std::size_t n) {
    note();
    if (void* p = __libc_malloc(n ? n : 1)) return p;
    throw std::bad_alloc();
}
void* operator new(std::size_t n, std::align_val_t al) {
    note();
    if (void* p = __libc_memalign(static_cast<std::size_t>(al), n ? n : 1)) return p;
    throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return operator new(n); }
void* operator new[](std::size_t n, std::align_val_t al) { return operator new(n, al); }
void operator delete(void* p) noexcept { __libc_free(p); }
void operator delete(void* p, std::size_t) noexcept { __libc_free(p); }
void operator delete(void* p, std::align_val_t) noexcept { __libc_free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { __libc_free(p); }
void operator delete[](void* p) noexcept { __libc_free(p); }
void operator delete[](void* p, std::size_t) noexcept { __libc_free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { __libc_free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { __libc_free(p); }
#endif

using namespace tenon;
using testing::random_array;

namespace {
auto make_mlp() { return Relu<512>({.dropout = 0.2}) >> Relu<512>({.dropout = 0.2}) >> Softmax<10>(); }
}  // namespace

TEST_CASE("the counter sees allocations", "[alloc]") {
    Count c;
    Floats2d a({100, 100});
    std::vector<int> v(10);
    const long n = c.stop();
    CHECK(n >= 2);
}

TEST_CASE("10,000 batch-1 predicts allocate nothing after warm-up", "[alloc]") {
    auto model = make_mlp();
    const Floats2d X = random_array(64, 784, 1);
    model.initialize(X);
    const Floats2d x = random_array(1, 784, 2);
    for (int i = 0; i < 3; ++i) (void)model.predict(x);
    Count c;
    float sink = 0;
    for (int i = 0; i < 10000; ++i) sink += model.predict(x)[0];
    const long n = c.stop();  // (before CHECK: Catch allocates)
    CHECK(n == 0);
    CHECK(sink > 0);
}

TEST_CASE("100 training steps allocate nothing after warm-up", "[alloc]") {
    auto model = make_mlp();
    const Floats2d X = random_array(128, 784, 3);
    Floats2d Y({128, 10});
    for (std::size_t i = 0; i < 128; ++i) Y(i, i % 10) = 1.0f;
    model.initialize(X, Y);
    Optimizer opt = Adam(0.001);
    CategoricalCrossentropy loss;
    auto step = [&] {
        auto [P, backprop] = model.begin_update(X);
        backprop(loss.get_grad(P, Y));
        model.finish_update(opt);
    };
    for (int i = 0; i < 3; ++i) step();
    Count c;
    for (int i = 0; i < 100; ++i) step();
    const long n = c.stop();
    CHECK(n == 0);
}

// The same through the lowered plan (include/tenon/lower/): its workspace is one array from
// the thread's cache, so after warm-up neither predict nor a training step allocates.
TEST_CASE("10,000 batch-1 plan predicts allocate nothing after warm-up", "[alloc][lower]") {
    auto model = make_mlp();
    model.initialize(random_array(64, 784, 1));
    const auto plan = lower(model);
    const Floats2d x = random_array(1, 784, 2);
    // (A longer warm-up than above: the matrix product's thread_local packing buffers in
    // src/cpu/sgemm_packed.hpp grow on each pool worker the first time it gets a task, and at
    // batch 1 which workers get tasks varies from call to call.)
    for (int i = 0; i < 300; ++i) (void)plan.predict(x);
    Count c;
    float sink = 0;
    for (int i = 0; i < 10000; ++i) sink += plan.predict(x)[0];
    const long n = c.stop();
    CHECK(n == 0);
    CHECK(sink > 0);
}

TEST_CASE("100 plan training steps allocate nothing after warm-up", "[alloc][lower]") {
    auto model = make_mlp();
    const Floats2d X = random_array(128, 784, 3);
    Floats2d Y({128, 10});
    for (std::size_t i = 0; i < 128; ++i) Y(i, i % 10) = 1.0f;
    model.initialize(X, Y);
    auto plan = lower(model);
    Optimizer opt = Adam(0.001);
    CategoricalCrossentropy loss;
    auto step = [&] {
        auto [P, backprop] = plan.begin_update(X);
        backprop(loss.get_grad(P, Y));
        model.finish_update(opt);
    };
    for (int i = 0; i < 3; ++i) step();
    Count c;
    for (int i = 0; i < 100; ++i) step();
    const long n = c.stop();
    CHECK(n == 0);
}

TEST_CASE("plan steps with LayerNorm, Maxout and a residual allocate nothing after warm-up", "[alloc][lower]") {
    auto model = Maxout<64, dyn, 3>({.dropout = 0.1, .normalize = true}) >>
                 residual(Relu<64>({.dropout = 0.2}) >> LayerNorm<64>()) >> sigmoid_activation() >> Softmax<10>();
    const Floats2d X = random_array(32, 50, 4);
    model.initialize(X);
    auto plan = lower(model);
    const Floats2d dY = random_array(32, 10, 5);
    Optimizer opt = Adam(0.001);
    auto step = [&] {
        auto [P, backprop] = plan.begin_update(X);
        backprop(dY);
        model.finish_update(opt);
        (void)plan.predict(X);
    };
    for (int i = 0; i < 3; ++i) step();
    Count c;
    for (int i = 0; i < 50; ++i) step();
    const long n = c.stop();
    CHECK(n == 0);
}

TEST_CASE("an embedding table's predict and training allocate nothing after warm-up", "[alloc]") {
    auto model = HashEmbed<16>(1000, 7) >> Relu<8>();
    Ints2d ids({32, 1});
    for (std::size_t i = 0; i < 32; ++i) ids[i] = static_cast<std::int32_t>(i * 37);
    model.initialize(ids);
    Optimizer opt = Adam(0.001);
    auto step = [&] {
        auto [Y, backprop] = model.begin_update(ids);
        backprop(Y);
        model.finish_update(opt);
    };
    for (int i = 0; i < 3; ++i) {
        (void)model.predict(ids);
        step();
    }
    Count c;
    float sink = 0;
    for (int i = 0; i < 100; ++i) {
        sink += model.predict(ids)[0];
        step();
    }
    const long n = c.stop();
    CHECK(n == 0);
    CHECK(std::isfinite(sink));
}
