// No heap allocation after warm-up: once a model has run a batch size, predict and a
// training step (begin_update, backprop, finish_update) reuse memory they already have
// (arrays come from the thread's cache of blocks, src/alloc.cpp). This program replaces the
// global operator new/delete and malloc/calloc/realloc/free and counts the calls made while
// the counter is on: 10,000 batch-1 predicts and 100 training steps must make none, and so
// must predicts and training steps at random batch sizes, and a tagger's at random document
// counts and lengths, once the thread has seen the range of its traffic.
// Under AddressSanitizer (make test-sanitize), whose runtime owns malloc and calls it before
// any replacement could run, the counter is ASan's own allocation hook instead
// (__sanitizer_install_malloc_and_free_hooks, which sees every malloc and operator new), and
// the block cache, off by default there, is turned on for this program: the same checks run.
#include <catch2/catch.hpp>

#include <execinfo.h>
#include <unistd.h>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <new>
#include <thread>
#include <vector>

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
// TENON_ALLOC_TRAP=1: print the stack of every counted allocation to stderr (addresses in
// the test program: addr2line -f -C -e build/tests/test_alloc 0x...).
const bool trap = std::getenv("TENON_ALLOC_TRAP") != nullptr;
inline void note() {
    if (counting.load(std::memory_order_relaxed)) {
        allocations.fetch_add(1, std::memory_order_relaxed);
        if (trap) {  // the allocation's stack, without allocating (backtrace was loaded by Count)
            void* frames[16];
            backtrace_symbols_fd(frames, backtrace(frames, 16), 2);
            (void)!write(2, "----\n", 5);
        }
    }
}
struct Count {
    Count() {
        if (trap) {  // (backtrace's first call loads libgcc_s, which allocates)
            void* frames[4];
            (void)backtrace(frames, 4);
        }
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

// An AnyModel (include/tenon/model/any_model.hpp) keeps the held model's backprop in a block of
// the same cache: alone and inside a chain whose plan runs it, no allocation after warm-up.
TEST_CASE("an AnyModel's predicts and training steps allocate nothing after warm-up", "[alloc][any_model]") {
    AnyModel<Floats2d, Floats2d> held = make_mlp();
    auto model = AnyModel<Floats2d, Floats2d>(Relu<64>() >> Relu<64>()) >> Softmax<10>();
    const Floats2d X = random_array(128, 784, 3);
    Floats2d Y({128, 10});
    for (std::size_t i = 0; i < 128; ++i) Y(i, i % 10) = 1.0f;
    held.initialize(X, Y);
    model.initialize(X, Y);
    Optimizer opt = Adam(0.001);
    CategoricalCrossentropy loss;
    const Floats2d x = random_array(1, 784, 2);
    // Each phase is warmed up just before it is counted, as in the cases above.
    const auto predicts = [&](auto& m) {
        for (int i = 0; i < 300; ++i) (void)m.predict(x);
        Count c;
        float sink = 0;
        for (int i = 0; i < 2000; ++i) sink += m.predict(x)[0];
        const long n = c.stop();
        return sink > 0 ? n : -1;
    };
    const auto steps = [&](auto& m) {
        auto step = [&] {
            auto [P, backprop] = m.begin_update(X);
            backprop(loss.get_grad(P, Y));
            m.finish_update(opt);
        };
        for (int i = 0; i < 3; ++i) step();
        Count c;
        for (int i = 0; i < 30; ++i) step();
        return c.stop();
    };
    const long held_predicts = predicts(held), chain_predicts = predicts(model);
    const long held_steps = steps(held), chain_steps = steps(model);
    CHECK(held_predicts == 0);
    CHECK(chain_predicts == 0);
    CHECK(held_steps == 0);
    CHECK(chain_steps == 0);
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

// A frozen plan (its weights' copies made once, docs/lowering.md "Frozen weights") at batch 1
// and 128: reading its copies takes no allocation either.
TEST_CASE("a frozen plan's predicts allocate nothing after warm-up", "[alloc][lower]") {
    auto model = make_mlp();
    model.initialize(random_array(64, 784, 1));
    auto plan = lower(model);
    plan.freeze_weights();
    const Floats2d x = random_array(1, 784, 2), X = random_array(128, 784, 3);
    for (int i = 0; i < 300; ++i) (void)plan.predict(x);
    for (int i = 0; i < 20; ++i) (void)plan.predict(X);
    Count c;
    float sink = 0;
    for (int i = 0; i < 2000; ++i) sink += plan.predict(x)[0];
    for (int i = 0; i < 50; ++i) sink += plan.predict(X)[0];
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

// ---- random batch sizes and document lengths ------------------------------------------------
// A service sees every batch size; the block cache's size classes (src/alloc.cpp) serve a
// call from the blocks of larger calls, so once a thread has seen its largest calls nothing
// allocates, and the cache holds a few times the arrays of the largest call, not a block for
// every size ever asked.
namespace {
// (The MLP's shape with smaller widths: the same arrays per call, a fraction of the time.)
auto make_small_mlp() { return Relu<64>({.dropout = 0.2}) >> Relu<64>({.dropout = 0.2}) >> Softmax<10>(); }
// A spaCy-like tagger: four hashed ids per word, embedded and mixed, a window encoder of two
// residual Maxout blocks, a softmax over 17 tags for every word.
auto make_tagger() {
    const MaxoutOptions maxout{.nP = 3, .dropout = 0.1, .normalize = true};
    auto embed = list2ragged<Ints2d>() >>
                 with_array<BasicRagged<Ints2d>>(concatenate(
                     HashEmbed<32>(500, 8u, 0), HashEmbed<32>(200, 9u, 1), HashEmbed<32>(200, 10u, 2),
                     HashEmbed<32>(100, 11u, 3))) >>
                 with_array<Ragged>(Maxout<32>(maxout)) >> ragged2list();
    auto encode = with_array<List<Floats2d>>(clone(residual(expand_window<1>() >> Maxout<32>(maxout)), 2), 2);
    return embed >> encode >> with_array<List<Floats2d>>(Softmax<17>());
}
// A text classifier: the same tables and mixer, the mean of each document's rows, a residual
// Relu and a softmax over 6 classes: one row per document.
auto make_textcat() {
    const MaxoutOptions maxout{.nP = 3, .dropout = 0.1, .normalize = true};
    return list2ragged<Ints2d>() >>
           with_array<BasicRagged<Ints2d>>(concatenate(HashEmbed<32>(500, 8u, 0), HashEmbed<32>(200, 9u, 1))) >>
           with_array<Ragged>(Maxout<32>(maxout)) >> reduce_mean() >> residual(Relu<32>({.dropout = 0.1})) >>
           Softmax<6>();
}
// A BiLSTM tagger: the tables and mixer, a BiLSTM of depth 2 under with_padded (its tapes in
// the plan's workspace), a softmax for every word.
auto make_bilstm_tagger() {
    const MaxoutOptions maxout{.nP = 3, .dropout = 0.1, .normalize = true};
    return list2ragged<Ints2d>() >>
           with_array<BasicRagged<Ints2d>>(concatenate(HashEmbed<32>(500, 8u, 0), HashEmbed<32>(200, 9u, 1))) >>
           with_array<Ragged>(Maxout<32>(maxout)) >> ragged2list() >>
           with_padded<List<Floats2d>>(BiLSTM<32>({.depth = 2, .dropout = 0.1})) >>
           with_array<List<Floats2d>>(Softmax<17>());
}
// spaCy's tok2vec with static vectors: a hashed table and StaticVectors over the same ids,
// mixed, a window encoder, a softmax for every word.
auto make_static_vectors_tagger() {
    const MaxoutOptions maxout{.nP = 3, .dropout = 0.1, .normalize = true};
    auto table = std::make_shared<const Floats2d>(random_array(5000, 16, 13));
    return list2ragged<Ints2d>() >>
           with_array<BasicRagged<Ints2d>>(
               concatenate(HashEmbed<32>(500, 8u, 0), StaticVectors<32, 16>(table, {.column = 1, .dropout = 0.1}))) >>
           with_array<Ragged>(Maxout<32>(maxout)) >> ragged2list() >>
           with_array<List<Floats2d>>(clone(residual(expand_window<1>() >> Maxout<32>(maxout)), 2), 1) >>
           with_array<List<Floats2d>>(Softmax<17>());
}
// An attention text classifier: the tables and mixer, ParametricAttention over each
// document's rows, their sum, a softmax per document.
auto make_attention_textcat() {
    const MaxoutOptions maxout{.nP = 3, .dropout = 0.1, .normalize = true};
    return list2ragged<Ints2d>() >>
           with_array<BasicRagged<Ints2d>>(concatenate(HashEmbed<32>(500, 8u, 0), HashEmbed<32>(200, 9u, 1))) >>
           with_array<Ragged>(Maxout<32>(maxout)) >> ParametricAttention_v2<32>(Gelu<32>()) >> reduce_sum() >>
           Softmax<6>();
}
List<Ints2d> random_docs(Rng& rng, std::size_t max_docs, std::size_t max_words, bool exact = false) {
    List<Ints2d> docs(exact ? max_docs : 1 + rng.below(max_docs));
    for (auto& doc : docs) {
        doc = Ints2d({exact ? max_words : 1 + rng.below(max_words), 4});
        for (auto& v : doc) v = static_cast<std::int32_t>(rng.next() & 0x7fffffff);
    }
    return docs;
}
}  // namespace

TEST_CASE("1,000 predicts at random batch sizes allocate nothing after warm-up", "[alloc][random]") {
    auto model = make_small_mlp();
    model.initialize(random_array(64, 96, 1));
    const Floats2d X = random_array(2048, 96, 2);
    Rng rng(7);
    auto call = [&](std::size_t rows) { return model.predict(Floats2dCView(X.data(), {rows, 96}))[0]; };
    // The warm-up a service would make: one call per power of two up to the largest batch,
    // then some traffic. A thread's cache then has a block within 4x of every array's size.
    float sink = 0;
    for (std::size_t b = 2048; b >= 1; b /= 2) sink += call(b);
    for (int i = 0; i < 100; ++i) sink += call(1 + rng.below(2048));
    std::vector<std::size_t> sizes(1000);
    for (auto& s : sizes) s = 1 + rng.below(2048);
    Count c;
    for (std::size_t s : sizes) sink += call(s);
    const long n = c.stop();
    CHECK(n == 0);
    CHECK(std::isfinite(sink));
}

TEST_CASE("training steps at random batch sizes allocate nothing after warm-up", "[alloc][random]") {
    auto model = make_small_mlp();
    const Floats2d X = random_array(512, 96, 3);
    Floats2d Y({512, 10});
    for (std::size_t i = 0; i < 512; ++i) Y(i, i % 10) = 1.0f;
    model.initialize(X, Y);
    Optimizer opt = Adam(0.001);
    CategoricalCrossentropy loss;
    Rng rng(8);
    auto step = [&](std::size_t rows) {
        auto [P, backprop] = model.begin_update(Floats2dCView(X.data(), {rows, 96}));
        backprop(loss.get_grad(P, Floats2dCView(Y.data(), {rows, 10})));
        model.finish_update(opt);
    };
    for (std::size_t b = 512; b >= 1; b /= 2) step(b);
    for (int i = 0; i < 100; ++i) step(1 + rng.below(512));
    std::vector<std::size_t> sizes(100);
    for (auto& s : sizes) s = 1 + rng.below(512);
    Count c;
    for (std::size_t s : sizes) step(s);
    const long n = c.stop();
    CHECK(n == 0);
}

namespace {
// A sequence model's steps (begin_update, backprop, finish_update, predict) at random document
// counts and lengths after a warm-up: the allocations counted.
template <class M>
void sequence_steps_allocate_nothing(M& model, Rng& rng) {
    Optimizer opt = Adam(0.001);
    auto first = [](const auto& P) {
        if constexpr (std::is_same_v<std::remove_cvref_t<decltype(P)>, Floats2d>) return P[0];
        else return P[0][0];
    };
    auto step = [&](const List<Ints2d>& docs) {
        auto [P, backprop] = model.begin_update(docs);
        backprop(P);  // (any gradient of the output's shape)
        model.finish_update(opt);
        return first(model.predict(docs));
    };
    // (The batches first: a service's documents come from elsewhere; made after the warm-up,
    // their arrays would take the small blocks the warm-up left in the cache.)
    std::vector<List<Ints2d>> batches;
    for (int i = 0; i < 50; ++i) batches.push_back(random_docs(rng, 64, 48));
    // The warm-up: document counts and lengths from the largest down, by factors of 2, then
    // some traffic.
    float sink = 0;
    for (std::size_t n = 64; n >= 1; n /= 2)
        for (std::size_t len = 48; len >= 1; len /= 2) sink += step(random_docs(rng, n, len, true));
    for (int i = 0; i < 300; ++i) sink += step(random_docs(rng, 64, 48));
    REQUIRE(model.uses_plan());  // the sequence plan is what is counted (docs/lowering.md)
    Count c;
    for (const auto& docs : batches) sink += step(docs);
    const long n = c.stop();
    CHECK(n == 0);
    CHECK(std::isfinite(sink));
}
}  // namespace

TEST_CASE("a tagger's predicts and training steps at random document counts and lengths allocate nothing after warm-up",
          "[alloc][random][sequences]") {
    auto model = make_tagger();
    Rng rng(9);
    model.initialize(random_docs(rng, 16, 30));
    sequence_steps_allocate_nothing(model, rng);
}

TEST_CASE("a text classifier's steps at random document counts and lengths allocate nothing after warm-up",
          "[alloc][random][sequences]") {
    auto model = make_textcat();
    Rng rng(10);
    model.initialize(random_docs(rng, 16, 30));
    sequence_steps_allocate_nothing(model, rng);
}

TEST_CASE("a BiLSTM tagger's steps at random document counts and lengths allocate nothing after warm-up",
          "[alloc][random][sequences][lstm]") {
    auto model = make_bilstm_tagger();
    Rng rng(11);
    model.initialize(random_docs(rng, 16, 30));
    sequence_steps_allocate_nothing(model, rng);
}

TEST_CASE("a tok2vec with StaticVectors: steps at random document counts and lengths allocate nothing after warm-up",
          "[alloc][random][sequences][static_vectors]") {
    auto model = make_static_vectors_tagger();
    Rng rng(13);
    model.initialize(random_docs(rng, 16, 30));
    sequence_steps_allocate_nothing(model, rng);
}

TEST_CASE("an attention text classifier's steps at random document counts and lengths allocate nothing after warm-up",
          "[alloc][random][sequences][attention]") {
    auto model = make_attention_textcat();
    Rng rng(12);
    model.initialize(random_docs(rng, 16, 30));
    sequence_steps_allocate_nothing(model, rng);
}

TEST_CASE("a bag-of-words classifier's (SparseLinear, a layer stage) steps at random batch sizes allocate nothing after warm-up",
          "[alloc][random][sparse]") {
    auto model = SparseLinear<6>({.length = 1 << 12}) >> sigmoid_activation();
    Rng rng(14);
    auto batch = [&](std::size_t docs) {  // 1..20 features per document
        Ints1d lengths({docs});
        std::size_t n = 0;
        for (auto& l : lengths) n += static_cast<std::size_t>(l = static_cast<std::int32_t>(1 + rng.below(20)));
        Keys1d keys({n});
        Floats1d values({n});
        for (std::size_t i = 0; i < n; ++i) {
            keys[i] = rng.next();
            values[i] = 1.0f;
        }
        return SparseFeatures(std::move(keys), std::move(values), std::move(lengths));
    };
    model.initialize(batch(16), Floats2d({16, 6}));
    Optimizer opt = Adam(0.001);
    auto step = [&](const SparseFeatures& X) {
        auto [P, backprop] = model.begin_update(X);
        backprop(P);
        model.finish_update(opt);
        return model.predict(X)[0];
    };
    std::vector<SparseFeatures> batches;
    for (int i = 0; i < 50; ++i) batches.push_back(batch(1 + rng.below(64)));
    float sink = 0;
    for (std::size_t n = 64; n >= 1; n /= 2) sink += step(batch(n));
    for (int i = 0; i < 200; ++i) sink += step(batch(1 + rng.below(64)));
    REQUIRE(model.uses_plan());
    Count c;
    for (const auto& X : batches) sink += step(X);
    const long n = c.stop();
    CHECK(n == 0);
    CHECK(std::isfinite(sink));
}

TEST_CASE("the block cache holds a few times the arrays of the largest call, and hands them back", "[alloc][random]") {
    auto model = make_small_mlp();
    model.initialize(random_array(64, 96, 1));
    const Floats2d X = random_array(2048, 96, 2);
    auto call = [&](std::size_t rows) { return model.predict(Floats2dCView(X.data(), {rows, 96}))[0]; };
    float sink = call(2048);
    release_array_cache();
    CHECK(array_cache_bytes() == 0);
    sink += call(2048);
    const std::size_t one_call = array_cache_bytes();  // the blocks of the largest call's arrays
    CHECK(one_call >= 2048 * (64 + 64 + 10) * sizeof(float));
    Rng rng(10);
    for (int i = 0; i < 2000; ++i) sink += call(1 + rng.below(2048));
    const std::size_t held = array_cache_bytes();
    INFO("one batch-2048 call: " << one_call << " bytes cached; after 2,000 random sizes: " << held);
    CHECK(held <= 3 * one_call);
    CHECK(held < array_cache_limit());

    // Another thread's blocks go back at its next call after release_array_cache().
    std::atomic<int> phase{0};
    std::size_t other_before = 0, other_after = 0;
    std::thread t([&] {
        sink += call(2048);
        other_before = array_cache_bytes();
        phase = 1;
        while (phase.load() != 2) std::this_thread::yield();
        Floats1d tiny({1});  // any array call of this thread
        other_after = array_cache_bytes();
        phase = 3;
    });
    while (phase.load() != 1) std::this_thread::yield();
    release_array_cache();
    phase = 2;
    while (phase.load() != 3) std::this_thread::yield();
    t.join();
    CHECK(other_before > one_call);  // both threads' blocks
    CHECK(other_after <= 64);        // both released (the tiny array's own block is in use)
    CHECK(std::isfinite(sink));
}

TEST_CASE("the block cache's bound: 0 caches nothing, a bound is kept", "[alloc][random]") {
    const std::size_t was = array_cache_limit();
    auto model = make_small_mlp();
    model.initialize(random_array(64, 96, 1));
    const Floats2d X = random_array(2048, 96, 2);
    release_array_cache();
    set_array_cache_limit(0);
    (void)model.predict(X);
    CHECK(array_cache_bytes() == 0);
    set_array_cache_limit(std::size_t{1} << 20);  // 1 MiB: the batch-2048 workspace does not fit
    (void)model.predict(X);
    CHECK(array_cache_bytes() <= (std::size_t{1} << 20));
    CHECK(array_cache_bytes() > 0);  // the output and small arrays are kept
    set_array_cache_limit(was);
    release_array_cache();
}

TEST_CASE("a thread's cache keeps its own blocks: another thread's model goes back",
          "[alloc][random]") {
    release_array_cache();
    // A "trainer" makes a model's worth of arrays (32 MiB); a "server" that only ever held a
    // small call's arrays frees them (an old model swapped out): they go to the system.
    std::vector<Floats2d> model;
    std::thread trainer([&] {
        for (int i = 0; i < 8; ++i) model.emplace_back(Floats2d({1024, 1024}, uninitialized));
    });
    trainer.join();
    std::size_t small_call = 0, after_free = 0;
    std::thread server([&] {
        { Floats2d call({64, 64}); }  // the server's own call: 16 KiB
        small_call = array_cache_bytes();
        model.clear();
        after_free = array_cache_bytes();
        Floats2d again({64, 64});  // its own call still finds its block
        (void)again;
    });
    server.join();
    INFO("after the server's call: " << small_call << " bytes cached; after it freed the model: " << after_free);
    CHECK(small_call >= 64 * 64 * sizeof(float));
    CHECK(after_free == small_call);  // not the model's 32 MiB
    // The thread that made the arrays keeps them when it frees them itself.
    std::size_t own = 0;
    std::thread owner([&] {
        std::vector<Floats2d> m;
        for (int i = 0; i < 8; ++i) m.emplace_back(Floats2d({1024, 1024}, uninitialized));
        m.clear();
        own = array_cache_bytes();
        release_array_cache();
    });
    owner.join();
    CHECK(own >= 8u * 1024 * 1024 * sizeof(float));
}
