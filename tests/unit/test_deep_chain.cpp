// Deep and unusual chains: a chain of 120 layers (the loop over a table of per-type functions
// that runs homogeneous chains) against its layers called one by one, the recursive path of
// a chain whose data type changes, chains built from lvalue and rvalue chains, and the
// store that holds the layers (copy, move, assignment, structured bindings, a >> that takes an
// rvalue chain's layers over and the moved-from chain's tenon-E118).
// (A 500-layer chain and its diagnostics: tests/meson.build's deep_chain tests, and
// bench/compile/run.py for the compile times.)
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <type_traits>
#include <utility>

#include "support/host_floats.hpp"
#include "tenon/tenon.hpp"

using namespace tenon;

namespace {
Floats2d random_array(std::size_t rows, std::size_t cols, std::uint64_t seed) {
    Rng rng(seed);
    Floats2d a({rows, cols}, uninitialized);
    for (float& v : a) v = static_cast<float>(rng.uniform() * 2.0 - 1.0);
    return a;
}

bool same(const Floats2d& a, const Floats2d& b) {
    if (a.shape() != b.shape()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (a[i] != b[i]) return false;
    return true;
}

// Layer I of a deep dense stack: Relu, Mish, LayerNorm, Dropout in turn.
template <std::size_t I>
auto deep_layer() {
    if constexpr (I % 4 == 0) return Relu<12>();
    else if constexpr (I % 4 == 1) return Mish<12>();
    else if constexpr (I % 4 == 2) return LayerNorm<>();
    else return Dropout(0.0);
}
template <std::size_t... I>
auto deep_chain(std::index_sequence<I...>) {
    return chain(deep_layer<I>()...);
}
template <class C, std::size_t... I>
Floats2d predict_one_by_one(const C& model, const Floats2d& X, std::index_sequence<I...>) {
    Floats2d cur(X);
    ((cur = model.template layer<I>().predict(cur)), ...);
    return cur;
}

// Floats2d -> Floats1d (row sums): a chain through it takes the recursive path.
class RowSum : public Layer<RowSum, Floats2d, Floats1d> {
    using Base = Layer<RowSum, Floats2d, Floats1d>;
    friend Base;

public:
    RowSum() : Base("rowsum", {}, {}) { mark_initialized(); }
    struct Backprop {
        std::size_t cols = 0;
        Floats2d operator()(Floats1dCView dY) const {  // (on the host: support/host_floats.hpp)
            const std::size_t rows = dY.shape(0);
            const std::vector<float> d = testing::host_floats(dY.data(), rows);
            std::vector<float> dx(rows * cols);
            for (std::size_t i = 0; i < rows; ++i)
                for (std::size_t j = 0; j < cols; ++j) dx[i * cols + j] = d[i];
            Floats2d dX({rows, cols}, uninitialized);
            testing::store_floats(dX.data(), dx);
            return dX;
        }
    };

private:
    void init_impl(const Floats2dCView*, const Floats1dCView*) {}
    Floats1d predict_impl(Floats2dCView X) const {
        const std::size_t rows = X.shape(0), cols = X.shape(1);
        const std::vector<float> x = testing::host_floats(X.data(), rows * cols);
        std::vector<float> sums(rows);
        for (std::size_t i = 0; i < rows; ++i) {
            float s = 0.0f;
            for (std::size_t j = 0; j < cols; ++j) s += x[i * cols + j];
            sums[i] = s;
        }
        Floats1d y({rows}, uninitialized);
        testing::store_floats(y.data(), sums);
        return y;
    }
    std::pair<Floats1d, Backprop> forward_impl(Floats2dCView X, bool) { return {predict_impl(X), Backprop{X.shape(1)}}; }
};
}  // namespace

TEST_CASE("a 120-layer chain runs its layers in order, forward and backward", "[chain][deep]") {
    constexpr std::size_t n = 120;
    fix_random_seed(0);
    auto model = deep_chain(std::make_index_sequence<n>{});
    STATIC_REQUIRE(decltype(model)::size() == n);
    STATIC_REQUIRE(std::is_same_v<std::remove_cvref_t<decltype(model.layer<n - 1>())>, Dropout>);
    STATIC_REQUIRE(std::is_same_v<std::remove_cvref_t<decltype(model.layer<5>())>, Mish<12, 12>>);
    const Floats2d X = random_array(5, 7, 1);
    model.initialize(X);
    CHECK(model.get_dim("nI") == 7);
    CHECK(model.get_dim("nO") == 12);
    CHECK(model.walk().size() == n + 1);

    const Floats2d P = model.predict(X);
    CHECK(same(P, predict_one_by_one(model, X, std::make_index_sequence<n>{})));

    auto [Y, backprop] = model.begin_update(X);
    CHECK(same(Y, P));  // dropout rate 0
    const Floats2d dX = backprop(Y);
    CHECK(dX.shape(0) == 5);
    CHECK(dX.shape(1) == 7);
    bool any_grad = false;
    for (float g : model.layer<0>().get_grad("W")) any_grad = any_grad || g != 0.0f;
    CHECK(any_grad);
}

TEST_CASE("a chain whose data type changes runs through each layer's own types", "[chain]") {
    auto model = Relu<5>() >> Dropout(0.0) >> RowSum();
    STATIC_REQUIRE(std::is_same_v<decltype(model)::Out, Floats1d>);
    const Floats2d X = random_array(4, 3, 2);
    model.initialize(X);
    CHECK(model.name() == "relu>>dropout>>rowsum");
    const Floats1d s = model.predict(X);
    REQUIRE(s.shape(0) == 4);
    auto [y, backprop] = model.begin_update(X);
    for (std::size_t i = 0; i < 4; ++i) CHECK(y[i] == s[i]);
    const Floats2d dX = backprop(y);
    CHECK(dX.shape(0) == 4);
    CHECK(dX.shape(1) == 3);
}

TEST_CASE("chains built from chains: lvalues are copied, rvalues moved, widths propagated", "[chain]") {
    const Floats2d X = random_array(4, 3, 3);
    auto a = Relu<8>() >> Mish<8>();
    a.initialize(X);
    const auto first_id = a.layer<0>().id();

    auto b = a >> LayerNorm<>();  // a copied: new ids, its weights kept
    STATIC_REQUIRE(std::is_same_v<decltype(b), Chain<Relu<8>, Mish<8, 8>, LayerNorm<8>>>);
    CHECK(b.layer<0>().id() != first_id);
    const auto wa = a.layer<0>().get_param("W"), wb = b.layer<0>().get_param("W");
    CHECK(std::equal(wa.begin(), wa.end(), wb.begin(), wb.end()));
    CHECK_FALSE(b.is_initialized());  // its LayerNorm is not

    auto c = LayerNorm<>() >> std::move(a);  // prepended: a's layers keep their widths
    STATIC_REQUIRE(std::is_same_v<decltype(c), Chain<LayerNorm<>, Relu<8>, Mish<8, 8>>>);
    CHECK(c.layer<1>().id() == first_id);

    const auto r = Relu<6>();
    auto d = chain(r, r, chain(Relu<6>(), Relu<6>()));
    STATIC_REQUIRE(std::is_same_v<decltype(d), Chain<Relu<6>, Relu<6, 6>, Relu<6, 6>, Relu<6, 6>>>);
    CHECK(d.layer<0>().id() != d.layer<1>().id());
}

TEST_CASE("a chain's layers copy, move and assign as a whole", "[chain]") {
    const Floats2d X = random_array(4, 3, 4);
    auto model = chain(Relu<6>(), Mish<6>(), Relu<6>());
    model.initialize(X);
    const Floats2d P = model.predict(X);

    auto copy = model;
    CHECK(copy.layer<1>().id() != model.layer<1>().id());
    CHECK(same(copy.predict(X), P));
    auto moved = std::move(copy);
    CHECK(same(moved.predict(X), P));
    copy = moved;
    CHECK(same(copy.predict(X), P));
    moved = std::move(copy);
    CHECK(same(moved.predict(X), P));

    auto& [l0, l1, l2] = moved.layers();
    CHECK(&l1 == &moved.layer<1>());
    STATIC_REQUIRE(std::is_same_v<std::remove_reference_t<decltype(l2)>, Relu<6, 6>>);
    CHECK(&get<2>(moved.layers()) == &moved.layer<2>());

    // A chain of initialised layers is ready to use.
    auto longer = chain(std::move(moved), Dropout(0.1));
    CHECK(longer.is_initialized());
    CHECK(same(longer.predict(X), P));
}

TEST_CASE("a >> b takes an rvalue chain's layers over; a moved-from chain says so when used", "[chain]") {
    const Floats2d X = random_array(4, 3, 5);
    auto a = Relu<8>() >> Mish<8>();
    a.initialize(X);
    const Node* relu = &a.layer<0>();
    const Floats2d P = a.predict(X);

    // The layers move with the store: the same objects, at the same addresses.
    auto b = std::move(a) >> Dropout(0.0);
    STATIC_REQUIRE(std::is_same_v<decltype(b), Chain<Relu<8>, Mish<8, 8>, Dropout>>);
    CHECK(&b.layer<0>() == relu);
    CHECK(b.is_initialized());
    CHECK(same(b.predict(X), P));
    CHECK(b.name() == "relu>>mish>>dropout");

    // The chain they left has no layers: a named error, not a read of nothing.
    CHECK_THROWS_WITH(a.predict(X), Catch::Matchers::Contains("tenon-E118") && Catch::Matchers::Contains("moved"));
    CHECK_THROWS_WITH(a.initialize(X), Catch::Matchers::Contains("tenon-E118"));
    CHECK_THROWS_WITH(a.begin_update(X), Catch::Matchers::Contains("tenon-E118"));
    CHECK(a.walk().size() == 1);  // itself, no children
    // ... and is usable again once assigned a chain.
    a = chain(Relu<8>(), Mish<8>());
    a.initialize(X);
    CHECK(a.predict(X).shape(1) == 8);

    // An lvalue chain on the left is copied: it keeps its layers.
    auto c = b >> Relu<4>();
    CHECK(&c.layer<0>() != &b.layer<0>());
    CHECK(same(b.predict(X), P));

    // A copy assigned over a moved-from chain of the same type, and a long >> expression.
    auto d = std::move(c);
    c = d;
    CHECK(c.layer<3>().id() != d.layer<3>().id());
    auto e = Relu<8>() >> Relu<8>() >> Relu<8>() >> Relu<8>() >> Relu<8>() >> Relu<8>() >> Relu<8>() >> Relu<8>() >>
             Relu<8>() >> Relu<8>() >> Relu<8>() >> Relu<8>() >> Softmax<3>();
    e.initialize(X);
    const Floats2d Q = e.predict(X);
    CHECK(Q.shape(1) == 3);
    CHECK(e.walk().size() == 14);
}

TEST_CASE("the chain's layer store (combinators/detail/chain_store.hpp): assignment in place, >> with an lvalue layer", "[chain]") {
    const Floats2d X = random_array(4, 3, 6);
    auto a = Relu<8>() >> Mish<8>();
    auto b = Relu<8>() >> Mish<8>();
    a.initialize(X);
    b.initialize(X);
    // Assigning a chain of the same type assigns each layer in place: the addresses stay.
    const Node* relu = &a.layer<0>();
    const Node* mish = &a.layer<1>();
    a = b;
    CHECK(&a.layer<0>() == relu);
    CHECK(&a.layer<1>() == mish);
    CHECK(same(a.predict(X), b.predict(X)));
    CHECK(a.layer<0>().id() != b.layer<0>().id());

    // An lvalue layer appended to an rvalue chain is copied, converted to its rebound type,
    // and left as it was.
    const auto last = Relu<5>();
    auto c = std::move(a) >> last;
    STATIC_REQUIRE(std::is_same_v<decltype(c), Chain<Relu<8>, Mish<8, 8>, Relu<5, 8>>>);
    CHECK(&c.layer<0>() == relu);
    CHECK(c.layer<2>().id() != last.id());
    CHECK_FALSE(last.has_dim("nI"));
    c.initialize(X);
    CHECK(c.predict(X).shape(1) == 5);
}
