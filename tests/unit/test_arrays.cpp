// Array / ArrayView (types/array.hpp): shapes, row-major indexing, static extents, views,
// copies and moves, row(), flat(), resize, alignment, empty arrays.
#include <catch2/catch.hpp>

#include <cstdint>
#include <type_traits>
#include <utility>

#include "tenon/types/array.hpp"

using namespace tenon;
using Catch::Matchers::Contains;

namespace {
bool aligned64(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 64 == 0; }

Floats2d iota2d(std::size_t rows, std::size_t cols) {
    Floats2d a({rows, cols});
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i);
    return a;
}
}  // namespace

TEST_CASE("arrays: shape, size and zero fill", "[arrays]") {
    Floats2d a({3, 4});
    CHECK(a.rank == 2);
    CHECK(a.shape(0) == 3);
    CHECK(a.shape(1) == 4);
    CHECK(a.shape() == std::array<std::size_t, 2>{3, 4});
    CHECK(a.size() == 12);
    CHECK_FALSE(a.empty());
    for (float v : a) CHECK(v == 0.0f);  // zero-filled unless constructed uninitialized

    Floats3d b({2, 3, 5});
    CHECK(b.size() == 30);
    CHECK(b.end() - b.begin() == 30);

    Array<float, 2, 3> s;  // fully static: the default shape is the static one
    CHECK(s.shape() == std::array<std::size_t, 2>{2, 3});
    CHECK(s.size() == 6);
    for (float v : s) CHECK(v == 0.0f);
}

TEST_CASE("arrays: row-major indexing", "[arrays]") {
    Floats2d a = iota2d(3, 4);
    CHECK(a(0, 0) == 0.0f);
    CHECK(a(0, 3) == 3.0f);
    CHECK(a(1, 0) == 4.0f);
    CHECK(a(2, 1) == 9.0f);
    a(2, 3) = -1.0f;
    CHECK(a[11] == -1.0f);

    Floats3d b({2, 3, 4});
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(i);
    CHECK(b(1, 2, 3) == static_cast<float>(1 * 12 + 2 * 4 + 3));
    CHECK(b(0, 1, 2) == static_cast<float>(6));

    Array<float, dyn, dyn> c({2, 3}, {1, 2, 3, 4, 5, 6});
    CHECK(c(0, 2) == 3.0f);
    CHECK(c(1, 0) == 4.0f);
    CHECK_THROWS_AS((Floats2d({2, 3}, {1, 2, 3})), ShapeError);

    Ints1d l({3}, {7, -1, 2});
    CHECK(l(1) == -1);
    Keys1d k({2}, {1ull << 40, 3});
    CHECK(k[0] == (1ull << 40));
}

TEST_CASE("arrays: static extents are checked", "[arrays]") {
    using A = Array<float, dyn, 4>;
    CHECK_NOTHROW(A({2, 4}));
    CHECK_THROWS_AS(A({2, 3}), ShapeError);
    CHECK_THROWS_WITH(A({2, 3}), Contains("static 4") && Contains("(2, 3)"));
    CHECK_THROWS_AS(A({2, 3}, uninitialized), ShapeError);
    try {
        A bad({2, 3});
        FAIL("no exception");
    } catch (const Error& e) {
        CHECK(e.id() == "tenon-E102");
    }

    A ok({5, 4});
    CHECK_THROWS_AS(ok.resize({5, 3}), ShapeError);
    CHECK(ok.shape() == std::array<std::size_t, 2>{5, 4});  // unchanged after the failed resize
    CHECK_NOTHROW(ok.resize({7, 4}));

    // A dyn array converts to a view with static extents only when the shape fits.
    Floats2d d({2, 3});
    CHECK_NOTHROW((ArrayView<const float, dyn, 3>(d.view())));
    CHECK_THROWS_AS((ArrayView<const float, dyn, 4>(d.view())), ShapeError);
    CHECK_THROWS_AS((ArrayView<float, 2, 4>(d.data(), {2, 3})), ShapeError);

    // Static views convert to dyn ones without a check; static vs static mismatch does not compile.
    static_assert(std::is_convertible_v<ArrayView<float, 2, 3>, ArrayView<const float, dyn, dyn>>);
    static_assert(!std::is_convertible_v<ArrayView<float, 2, 3>, ArrayView<float, 2, 4>>);
    static_assert(!std::is_convertible_v<ArrayView<float, dyn>, ArrayView<float, dyn, dyn>>);
}

TEST_CASE("arrays: views and const views", "[arrays]") {
    Floats2d a = iota2d(2, 3);
    Floats2dView v = a;
    Floats2dCView cv = a;
    CHECK(v.data() == a.data());
    CHECK(cv.data() == a.data());
    CHECK(v.shape() == a.shape());
    v(1, 2) = 42.0f;  // writes through to the array
    CHECK(a(1, 2) == 42.0f);
    CHECK(cv(1, 2) == 42.0f);

    // A writable view converts to a read-only one, never the reverse.
    Floats2dCView from_view = v;
    CHECK(from_view.data() == a.data());
    static_assert(std::is_convertible_v<Floats2dView, Floats2dCView>);
    static_assert(!std::is_convertible_v<Floats2dCView, Floats2dView>);
    static_assert(std::is_same_v<decltype(cv(0, 0)), const float&>);
    // A const array gives only read-only views.
    static_assert(!std::is_convertible_v<const Floats2d&, Floats2dView>);
    static_assert(std::is_convertible_v<const Floats2d&, Floats2dCView>);
    static_assert(!std::is_convertible_v<const Array<float, 2, 3>&, ArrayView<float, dyn, dyn>>);
    static_assert(!std::is_convertible_v<const Array<float, 2, 3>&, ArrayView<float, 2, dyn>>);
    static_assert(std::is_convertible_v<const Array<float, 2, 3>&, ArrayView<const float, dyn, dyn>>);
    static_assert(std::is_convertible_v<Array<float, 2, 3>&, ArrayView<float, dyn, dyn>>);

    // A view of a static array loses nothing when it becomes dyn.
    Array<float, 2, 3> s;
    ArrayView<float, dyn, dyn> sv = s;
    sv(1, 1) = 5.0f;
    CHECK(s(1, 1) == 5.0f);

    // Default views are empty.
    Floats2dCView none;
    CHECK(none.data() == nullptr);
    CHECK(none.size() == 0);
    CHECK(none.empty());
}

TEST_CASE("arrays: copies are deep, moves are cheap", "[arrays]") {
    Floats2d a = iota2d(3, 4);
    Floats2d b = a;
    CHECK(b.data() != a.data());
    CHECK(b.shape() == a.shape());
    b(0, 0) = 99.0f;
    CHECK(a(0, 0) == 0.0f);
    CHECK(aligned64(b.data()));

    Floats2d c;
    c = a;  // copy assignment
    CHECK(c.data() != a.data());
    CHECK(c(2, 3) == 11.0f);

    // Deep copy from a view.
    Floats2d d(a.view());
    CHECK(d.data() != a.data());
    CHECK(d(1, 1) == a(1, 1));
    Floats2d e{Floats2dCView(a)};
    CHECK(e(2, 2) == a(2, 2));

    const float* p = a.data();
    Floats2d m(std::move(a));
    CHECK(m.data() == p);  // the buffer moved, not copied
    CHECK(m(2, 3) == 11.0f);
    CHECK(a.size() == 0);  // NOLINT(bugprone-use-after-move): moved-from is empty and valid
    a = iota2d(1, 2);      // and may be assigned to again
    CHECK(a(0, 1) == 1.0f);

    Floats2d n;
    n = std::move(m);
    CHECK(n.data() == p);
    CHECK(m.size() == 0);  // NOLINT(bugprone-use-after-move)

    // A moved-from array with a fully static shape stays usable (its shape is part of its type).
    Array<float, 2, 3> s;
    s(1, 2) = 3.0f;
    Array<float, 2, 3> t(std::move(s));
    CHECK(t(1, 2) == 3.0f);
    CHECK(s.size() == 6);  // NOLINT(bugprone-use-after-move)
    REQUIRE(s.data() != nullptr);
    s(1, 2) = 1.0f;
    Array<float, 2, 3> u;
    u = std::move(t);
    CHECK(u(1, 2) == 3.0f);
    CHECK(t.size() == 6);  // NOLINT(bugprone-use-after-move)
    REQUIRE(t.data() != nullptr);
    t(1, 2) = 1.0f;
    CHECK(u(1, 2) == 3.0f);
}

TEST_CASE("arrays: row()", "[arrays]") {
    Floats2d a = iota2d(3, 4);
    auto r = a.row(1);
    static_assert(std::is_same_v<decltype(r), ArrayView<float, dyn>>);
    CHECK(r.shape(0) == 4);
    CHECK(r(0) == 4.0f);
    CHECK(r(3) == 7.0f);
    r(2) = -5.0f;
    CHECK(a(1, 2) == -5.0f);

    const Floats2d& ca = a;
    auto cr = ca.row(2);
    static_assert(std::is_same_v<decltype(cr), ArrayView<const float, dyn>>);
    CHECK(cr(0) == 8.0f);

    // The row of an array with a static width keeps the width in its type.
    Array<float, dyn, 4> s({2, 4});
    auto sr = s.row(1);
    static_assert(std::is_same_v<decltype(sr), ArrayView<float, 4>>);
    CHECK(sr.data() == s.data() + 4);

    // Rank 3: a row is a matrix.
    Floats3d b({2, 3, 4});
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(i);
    auto m = b.row(1);
    static_assert(decltype(m)::rank == 2);
    CHECK(m.shape() == std::array<std::size_t, 2>{3, 4});
    CHECK(m(2, 1) == b(1, 2, 1));
    CHECK(m.row(2)(1) == b(1, 2, 1));
}

TEST_CASE("arrays: flat()", "[arrays]") {
    Floats3d b({2, 3, 4});
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(i);
    auto f = b.view().flat();
    static_assert(std::is_same_v<decltype(f), ArrayView<float, dyn>>);
    CHECK(f.shape(0) == 24);
    CHECK(f.data() == b.data());
    CHECK(f(13) == b(1, 0, 1));
    f(23) = -1.0f;
    CHECK(b(1, 2, 3) == -1.0f);
    CHECK(b.row(1).flat().shape(0) == 12);
    CHECK(b.row(1).flat()(0) == 12.0f);
}

TEST_CASE("arrays: resize keeps the buffer when it is large enough", "[arrays]") {
    Floats2d a({4, 5});
    const float* p = a.data();
    a.resize({2, 3});
    CHECK(a.shape() == std::array<std::size_t, 2>{2, 3});
    CHECK(a.data() == p);
    a.resize({5, 4}, uninitialized);  // back to the capacity: still no allocation
    CHECK(a.data() == p);
    a.resize({1, 20});
    CHECK(a.data() == p);
    for (float v : a) CHECK(v == 0.0f);  // resize without `uninitialized` zero-fills
    a.resize({0, 7});
    CHECK(a.empty());
    CHECK(a.data() == p);
    a.resize({3, 3});
    CHECK(a.data() == p);

    a.resize({6, 6});  // larger than the capacity: reallocates, still aligned
    CHECK(a.size() == 36);
    CHECK(aligned64(a.data()));
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = 1.0f;  // every element is writable

    // Copy assignment into a large enough array reuses its buffer too.
    Floats2d big({10, 10});
    const float* q = big.data();
    Floats2d small = iota2d(2, 3);
    big = small;
    CHECK(big.data() == q);
    CHECK(big.shape() == small.shape());
    CHECK(big(1, 2) == 5.0f);
}

TEST_CASE("arrays: 64-byte alignment", "[arrays]") {
    for (std::size_t n : {1u, 3u, 7u, 16u, 17u, 100u, 1001u}) {
        Floats1d a({n});
        CHECK(aligned64(a.data()));
        Floats2d b({n, 3}, uninitialized);
        CHECK(aligned64(b.data()));
        Ints1d c({n});
        CHECK(aligned64(c.data()));
        Floats2d d(b);
        CHECK(aligned64(d.data()));
    }
}

TEST_CASE("arrays: empty arrays", "[arrays]") {
    Floats2d def;
    CHECK(def.shape() == std::array<std::size_t, 2>{0, 0});
    CHECK(def.size() == 0);
    CHECK(def.empty());
    CHECK(def.begin() == def.end());

    Floats2d a({0, 5});
    CHECK(a.shape(1) == 5);
    CHECK(a.size() == 0);
    CHECK(a.empty());
    a.fill(1.0f);  // no-op, no crash
    Floats2d b = a;
    CHECK(b.shape() == a.shape());
    CHECK(b.empty());
    Floats2dCView v = a;
    CHECK(v.shape(1) == 5);
    CHECK(v.empty());
    CHECK(v.flat().size() == 0);
    Floats2d c(v);
    CHECK(c.shape() == std::array<std::size_t, 2>{0, 5});

    Array<float, dyn, 4> s({0, 4});
    CHECK(s.empty());
    CHECK_THROWS_AS((Array<float, dyn, 4>({0, 3})), ShapeError);  // empty, but still the wrong width
}

#include "tenon/types/eigen.hpp"

TEST_CASE("arrays: zero-copy Eigen maps", "[arrays]") {
    Floats2d A({2, 3}, {1, 2, 3, 4, 5, 6});
    auto m = as_matrix(A);
    CHECK(m.rows() == 2);
    CHECK(m(1, 0) == 4.0f);
    m(0, 1) = 9.0f;  // writes through to the array
    CHECK(A(0, 1) == 9.0f);
    const Floats2d& cA = A;
    auto cm = as_matrix(cA);
    STATIC_REQUIRE(std::is_const_v<std::remove_reference_t<decltype(cm.coeffRef(0, 0))>>);
    CHECK(cm.sum() == Approx(1 + 9 + 3 + 4 + 5 + 6));
    Floats1d v({3}, {1, 2, 3});
    CHECK(as_vector(v).dot(as_vector(v)) == Approx(14.0f));
    CHECK(as_matrix(Floats2dCView(A)).data() == A.data());
}
