// Array sizes (issue 16, item 2; docs/reliability.md "Memory"): a shape whose size overflows
// is tenon-E240 (never a short buffer), an allocation the system cannot make is tenon-E241
// with the bytes and the shape (and, through a model's entry points, the layer's path); a
// failed resize leaves the array as it was. Also the block cache after the thread's cache is
// gone (item 1, in-process; tests/memory/static_storage.cpp is the at-exit case).
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <thread>

#include "tenon/tenon.hpp"

using namespace tenon;
using Catch::Matchers::Contains;

namespace {
constexpr std::size_t huge = std::size_t(1) << 62;
// 2^60 bytes of floats: within PTRDIFF_MAX (so not tenon-E240) but beyond any x86-64 address
// space, so no overcommit setting lets it succeed (ASan refuses it too, returning null with
// allocator_may_return_null=1, which tests/memory/meson.build sets for this program).
constexpr std::size_t too_many_rows = std::size_t(1) << 58;

template <class F>
Error caught(F&& f) {
    try {
        f();
    } catch (const Error& e) {
        return e;
    }
    FAIL("no tenon::Error thrown");
    return Error("");
}
}  // namespace

TEST_CASE("a shape whose size overflows is tenon-E240, not a short buffer", "[memory]") {
    Error e = caught([] { Floats2d a({huge, 1}); });  // 2^62 floats: 2^64 bytes
    CHECK(e.id() == "tenon-E240");
    CHECK_THAT(e.what(), Contains("(4611686018427387904, 1)"));
    CHECK(caught([] { Floats2d a({huge, 4}); }).id() == "tenon-E240");  // elements overflow
    CHECK(caught([] { Floats3d a({huge, 2, 2}); }).id() == "tenon-E240");
    CHECK(caught([] { Floats2d a({huge, 1}, uninitialized); }).id() == "tenon-E240");
    CHECK(caught([] { Array<std::uint64_t, dyn> a({std::size_t(1) << 61}); }).id() == "tenon-E240");
    CHECK(caught([] { Floats1d a({std::size_t(-1)}); }).id() == "tenon-E240");
    // An empty array is fine whatever its other extents.
    Floats3d empty({0, huge, huge});
    CHECK(empty.size() == 0);
    CHECK(empty.data() == nullptr);
}

TEST_CASE("resize to an overflowing shape is tenon-E240 and leaves the array unchanged", "[memory]") {
    Floats2d a({2, 3}, {1, 2, 3, 4, 5, 6});
    CHECK(caught([&] { a.resize({huge, 1}); }).id() == "tenon-E240");
    CHECK(caught([&] { a.resize({huge, 1}, uninitialized); }).id() == "tenon-E240");
    CHECK(a.shape() == Floats2d::shape_type{2, 3});
    CHECK(a(1, 2) == 6.0f);
}

TEST_CASE("an allocation the system cannot make is tenon-E241 with bytes and shape", "[memory]") {
    Error e = caught([] { Floats2d a({too_many_rows, 1}); });
    CHECK(e.id() == "tenon-E241");
    CHECK_THAT(e.what(), Contains("1152921504606846976 bytes"));
    CHECK_THAT(e.what(), Contains("(288230376151711744, 1)"));
    Floats2d a({2, 3}, {1, 2, 3, 4, 5, 6});
    CHECK(caught([&] { a.resize({too_many_rows, 1}); }).id() == "tenon-E241");
    CHECK(a.shape() == Floats2d::shape_type{2, 3});
    CHECK(a(1, 2) == 6.0f);
    Floats2d b({4, 4});  // and allocation goes on working
    CHECK(b.size() == 16);
}

TEST_CASE("a layer whose parameters cannot exist is an error naming the layer, not a crash", "[memory]") {
    SECTION("the size overflows: tenon-E240") {
        auto model = Linear<>({.nO = huge, .nI = 4});
        Error e = caught([&] { model.initialize(); });
        CHECK(e.id() == "tenon-E240");
        CHECK(e.node_path() == "linear");
        CHECK_FALSE(model.is_initialized());
    }
    SECTION("no memory for it: tenon-E241, with the path in a chain") {
        auto model = Relu<8, 4>() >> Linear<>({.nO = too_many_rows / 8, .nI = 8});
        Error e = caught([&] { model.initialize(); });
        CHECK(e.id() == "tenon-E241");
        CHECK(e.node_path() == "chain>1>linear");
        CHECK_THAT(e.what(), Contains("chain>1>linear: array: cannot allocate "));
        CHECK_THAT(e.what(), Contains(" bytes for shape ("));
    }
    SECTION("no memory for it, the layer called by itself: its name leads the message") {
        auto model = SparseLinear<>({.nO = std::size_t(1) << 26, .length = std::size_t(1) << 32});  // 2^60 bytes
        Error e = caught([&] { model.initialize(); });
        CHECK(e.id() == "tenon-E241");
        CHECK(e.node_path() == "sparse_linear");
        CHECK_THAT(e.what(), Contains("sparse_linear: array: cannot allocate "));
        CHECK_FALSE(model.is_initialized());
    }
    SECTION("an overflowing nI: tenon-E240") {
        auto model = Linear<>({.nO = 3, .nI = huge});
        CHECK(caught([&] { model.initialize(); }).id() == "tenon-E240");
    }
}

TEST_CASE("a plan's workspace whose size overflows is tenon-E240, not a short buffer", "[memory]") {
    // with_array's pad rows between sequences: (sequences + 1) * pad overflows size_t.
    // (The layers' path, which initialize(X) runs, refuses the flattened array: tenon-E240.)
    auto model = with_array<List<Floats2d>>(Relu<4, 3>() >> expand_window<1>(), std::size_t(1) << 62);
    List<Floats2d> X;
    X.push_back(Floats2d({2, 3}));
    X.push_back(Floats2d({3, 3}));
    CHECK(caught([&] { model.initialize(X); }).id() == "tenon-E240");
    model.initialize();  // the widths are in the types
    CHECK(caught([&] { (void)model.predict(X); }).id() == "tenon-E240");
    CHECK(caught([&] { (void)model.begin_update(X); }).id() == "tenon-E240");
    auto small = with_array<List<Floats2d>>(Relu<4, 3>() >> expand_window<1>(), 2);  // and a real pad works
    small.initialize(X);
    CHECK(small.predict(X)[1].shape() == Floats2d::shape_type{3, 12});
}

TEST_CASE("arrays freed after their thread's block cache is destroyed go to the system", "[memory]") {
    const bool was = detail::array_cache_enabled();
    detail::set_array_cache(true);
    std::thread t([] {
        thread_local Floats2d late;  // constructed before the thread's cache: destroyed after it
        (void)late.size();
        Floats2d a({32, 32});  // the cache comes to life here
        { Floats2d b({16, 16}); }  // and holds a block
        late = Floats2d({64, 64});
    });
    t.join();
    detail::set_array_cache(was);
    SUCCEED("no crash (under ASan: no report)");
}
