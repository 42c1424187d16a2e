// The combinators (include/tenon/combinators/{add,concatenate,residual,bidirectional,siamese,
// clone,noop}.hpp, layers/cauchysimilarity.hpp): oracle cases vs Thinc
// (gen_thinc_combinators.py), finite-difference gradient checks, their laws, edge cases and
// errors, and their use inside chain.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "oracle/case.hpp"
#include "support/gradcheck_any.hpp"
#include "support/host_floats.hpp"
#include "tenon/tenon.hpp"

using namespace tenon;
using oracle::Case;
using oracle::check_close;
using Catch::Matchers::Contains;

namespace {

// ---- test-only layers -------------------------------------------------------------------
// RowsLinear<T>: a Linear applied to every row of a Ragged, a Padded ((T, B, N) as T*B rows,
// padding included) or a List; the generator's rows(Linear) computes the same in Thinc.
template <class T>
class RowsLinear : public Layer<RowsLinear<T>, T, T> {
    using Base = Layer<RowsLinear<T>, T, T>;
    friend Base;

public:
    RowsLinear(std::size_t nO, std::size_t nI) : Base("rows", {{"nO", dyn}, {"nI", dyn}}, {}),
        lin_(LinearOptions{nO, nI}) {
        this->set_dim("nO", nO);
        this->set_dim("nI", nI);
    }
    Linear<>& linear() { return lin_; }
    void for_each_child(const std::function<void(Node&)>& f) override { f(lin_); }

    struct Backprop {
        Linear<>::Backprop bp;
        T like;  // the input (its layout)
        T operator()(const T& dY) const { return from_rows(like, bp(to_rows(dY)), like_width()); }
        std::size_t like_width() const { return detail::width_of(like); }
    };

private:
    static Floats2d to_rows(const T& x) {
        if constexpr (requires { x.size_at_t(); }) {
            const auto& d = x.data();
            return Floats2d(Floats2dCView(d.data(), {d.shape(0) * d.shape(1), d.shape(2)}));
        } else if constexpr (requires { x.lengths(); }) {
            return x.data();
        } else {
            return to_ragged(x).data();
        }
    }
    static T from_rows(const T& like, const Floats2d& rows, std::size_t) {
        if constexpr (requires { like.size_at_t(); }) {
            const auto& d = like.data();
            Floats3d out({d.shape(0), d.shape(1), rows.shape(1)}, uninitialized);
            detail::copy_bytes(out.data(), out.memory(), rows.data(), rows.memory(), rows.size() * sizeof(float));
            return like.with_data(std::move(out));
        } else if constexpr (requires { like.lengths(); }) {
            return like.with_data(rows);
        } else {
            Ints1d lengths({like.size()});
            for (std::size_t i = 0; i < like.size(); ++i) lengths[i] = static_cast<std::int32_t>(like[i].shape(0));
            return to_list(Ragged(rows, lengths));
        }
    }
    void init_impl(const T*, const T*) {
        lin_.initialize();
        this->mark_initialized();
    }
    T predict_impl(const T& X) const { return from_rows(X, lin_.predict(to_rows(X)), 0); }
    std::pair<T, Backprop> forward_impl(const T& X, bool is_train) {
        auto r1_ = lin_(to_rows(X), is_train);
        [[maybe_unused]] auto& y = r1_.first;
        [[maybe_unused]] auto& bp = r1_.second;
        return {from_rows(X, y, 0), Backprop{std::move(bp), X}};
    }

    Linear<> lin_;
};

// CumSum: a Padded layer that sums over time, Y[t] = X[0] + ... + X[t] (within each length):
// run as r2l it must give suffix sums, which shows the reversal.
class CumSum : public Layer<CumSum, Padded, Padded> {
    using Base = Layer<CumSum, Padded, Padded>;
    friend Base;

public:
    CumSum() : Base("cumsum", {}, {}) { this->mark_initialized(); }
    struct Backprop {
        Padded operator()(const Padded& dY) const {  // dX[t] = dY[t] + ... + dY[len - 1]
            const std::size_t B = dY.data().shape(1), N = dY.data().shape(2);
            std::vector<float> d = testing::host_floats(dY.data().data(), dY.data().size());
            for (std::size_t b = 0; b < B; ++b)
                for (std::size_t t = static_cast<std::size_t>(dY.lengths()[b]); t-- > 1;)
                    for (std::size_t k = 0; k < N; ++k) d[((t - 1) * B + b) * N + k] += d[(t * B + b) * N + k];
            Floats3d out(dY.data().shape(), uninitialized);
            testing::store_floats(out.data(), d);
            return dY.with_data(std::move(out));
        }
    };

private:
    void init_impl(const Padded*, const Padded*) {}
    Padded predict_impl(const Padded& X) const {  // (on the host: support/host_floats.hpp)
        const std::size_t B = X.data().shape(1), N = X.data().shape(2);
        std::vector<float> d = testing::host_floats(X.data().data(), X.data().size());
        for (std::size_t b = 0; b < B; ++b)
            for (std::size_t t = 1; t < static_cast<std::size_t>(X.lengths()[b]); ++t)
                for (std::size_t k = 0; k < N; ++k) d[(t * B + b) * N + k] += d[((t - 1) * B + b) * N + k];
        Floats3d out(X.data().shape(), uninitialized);
        testing::store_floats(out.data(), d);
        return X.with_data(std::move(out));
    }
    std::pair<Padded, Backprop> forward_impl(const Padded& X, bool) { return {predict_impl(X), Backprop{}}; }
};

Floats2d random2d(std::size_t r, std::size_t c, std::uint64_t seed) {
    Floats2d a({r, c});
    Rng rng(seed);
    for (float& v : a) v = static_cast<float>(rng.uniform(-1.0, 1.0));
    return a;
}
Ragged random_ragged(std::initializer_list<std::int32_t> lengths, std::size_t width, std::uint64_t seed) {
    std::size_t rows = 0;
    for (auto l : lengths) rows += static_cast<std::size_t>(l);
    return Ragged(random2d(rows, width, seed), lengths);
}
List<Floats2d> random_list(std::initializer_list<std::size_t> lengths, std::size_t width, std::uint64_t seed) {
    List<Floats2d> out;
    for (auto l : lengths) out.push_back(random2d(l, width, seed++));
    return out;
}

void set_from(Node& n, const Case& c, const std::string& prefix) {
    for (const auto& p : n.param_names()) n.set_param(p, c.param(prefix + "." + p));
}
void check_grads(Node& n, const Case& c, const std::string& prefix) {
    for (const auto& p : n.param_names()) check_close(c, prefix + ".d" + p, n.get_grad(p));
}
template <class M>
void zero_grads(M& model) {
    for (Node* n : model.walk())
        for (const auto& p : n->param_names())
            if (n->has_param(p))
                for (float& g : n->get_grad(p)) g = 0.0f;
}
template <class F>
std::string error_id(F&& f) {
    try {
        f();
    } catch (const Error& e) {
        INFO(e.what());
        return e.id();
    }
    return "no error";
}

}  // namespace

// ---- signatures ---------------------------------------------------------------------------
// Flat packs, data types, static widths.
static_assert(std::is_same_v<decltype(Relu<4>() + Linear<4>() + Relu<4>()), Add<Relu<4>, Linear<4>, Relu<4>>>);
static_assert(std::is_same_v<decltype(add(Relu<4>() + Relu<4>(), Relu<4>() + Relu<4>())),
                             Add<Relu<4>, Relu<4>, Relu<4>, Relu<4>>>);
static_assert(std::is_same_v<decltype(Relu<4>() | Relu<6>() | Relu<2>()), Concatenate<Relu<4>, Relu<6>, Relu<2>>>);
static_assert(decltype(Relu<4>() | Relu<6>() | Relu<2>())::static_nO == 12);
static_assert(decltype(Relu<4>() | Relu<>())::static_nO == dyn);
static_assert(decltype(Relu<4>() + Relu<>())::static_nO == 4);
// A static nI on one child is every child's (they share the input).
static_assert(std::is_same_v<decltype(Relu<4, 3>() | Relu<6>()), Concatenate<Relu<4, 3>, Relu<6, 3>>>);
static_assert(std::is_same_v<decltype(concatenate(Relu<4>())), Relu<4>>);
static_assert(std::is_same_v<decltype(concatenate()), Noop<Floats2d>>);
static_assert(std::is_same_v<decltype(noop<Ragged>() | noop<Ragged>())::Out, Ragged>);
static_assert(std::is_same_v<decltype(residual(Relu<4>()))::In, Floats2d>);
static_assert(decltype(residual(Relu<4>()))::static_nO == 4 && decltype(residual(Relu<4>()))::static_nI == 4);
static_assert(std::is_same_v<decltype(residual(noop<List<Floats2d>>()))::Out, List<Floats2d>>);
static_assert(std::is_same_v<decltype(bidirectional(noop<Padded>()))::In, Padded>);
static_assert(std::is_same_v<decltype(siamese(Relu<4>(), CauchySimilarity<4>()))::In, std::pair<Floats2d, Floats2d>>);
static_assert(std::is_same_v<decltype(siamese(Relu<4>(), CauchySimilarity<4>()))::Out, Floats1d>);
static_assert(decltype(siamese(Relu<4>(), CauchySimilarity<4>()))::static_nO == 1);
// Width propagation through the combinators in a chain.
using ChainConcat = decltype(Relu<8>() >> (Relu<4>() | Relu<6>()) >> Softmax<3>());
static_assert(std::is_same_v<ChainConcat, Chain<Relu<8>, Concatenate<Relu<4, 8>, Relu<6, 8>>, Softmax<3, 10>>>);
static_assert(std::is_same_v<decltype(Relu<8>() >> residual(Relu<>()) >> Softmax<3>()),
                             Chain<Relu<8>, Residual<Relu<dyn, 8>>, Softmax<3, 8>>>);
static_assert(std::is_same_v<decltype(Relu<8>() >> (Relu<5>() + Relu<5>()) >> Softmax<3>()),
                             Chain<Relu<8>, Add<Relu<5, 8>, Relu<5, 8>>, Softmax<3, 5>>>);

// ---- oracle vs Thinc ----------------------------------------------------------------------
TEST_CASE("add: oracle vs Thinc (Floats2d, three layers)", "[combinators][oracle]") {
    Case c("add_f2d");
    // (Linear first: with a Relu first, Thinc's add corrupts the Relu's saved output; see
    // docs/combinators.md. The gradient check below covers a Relu first.)
    auto m = Linear<4>() + Relu<4>() + Relu<4>();
    const Floats2d X = c.f2("X");
    m.initialize(X);
    set_from(m.layer<0>(), c, "l0");
    set_from(m.layer<1>(), c, "l1");
    set_from(m.layer<2>(), c, "l2");
    auto r2_ = m.begin_update(X);
    [[maybe_unused]] auto& Y = r2_.first;
    [[maybe_unused]] auto& bp = r2_.second;
    check_close(c, "Y", Y);
    check_close(c, "Y", m.predict(X));
    check_close(c, "dX", bp(c.f2("dY")));
    check_grads(m.layer<0>(), c, "l0");
    check_grads(m.layer<1>(), c, "l1");
    check_grads(m.layer<2>(), c, "l2");
}

TEST_CASE("concatenate: oracle vs Thinc (Floats2d)", "[combinators][oracle]") {
    Case c("concat_f2d");
    auto m = Relu<4>() | Linear<2>() | Relu<3>();
    const Floats2d X = c.f2("X");
    m.initialize(X);
    CHECK(m.get_dim("nO") == 9);
    set_from(m.layer<0>(), c, "l0");
    set_from(m.layer<1>(), c, "l1");
    set_from(m.layer<2>(), c, "l2");
    auto r3_ = m.begin_update(X);
    [[maybe_unused]] auto& Y = r3_.first;
    [[maybe_unused]] auto& bp = r3_.second;
    check_close(c, "Y", Y);
    check_close(c, "Y", m.predict(X));
    check_close(c, "dX", bp(c.f2("dY")));
    check_grads(m.layer<0>(), c, "l0");
    check_grads(m.layer<1>(), c, "l1");
    check_grads(m.layer<2>(), c, "l2");
}

TEST_CASE("concatenate: oracle vs Thinc (Ragged, a zero-length sequence)", "[combinators][oracle]") {
    Case c("concat_ragged");
    auto m = RowsLinear<Ragged>(4, 3) | RowsLinear<Ragged>(2, 3);
    const Ragged X = oracle::read_ragged(c, "X");
    m.initialize(X);
    set_from(m.layer<0>().linear(), c, "l0");
    set_from(m.layer<1>().linear(), c, "l1");
    auto r4_ = m.begin_update(X);
    [[maybe_unused]] auto& Y = r4_.first;
    [[maybe_unused]] auto& bp = r4_.second;
    check_close(c, "Y", Y);
    check_close(c, "dX", bp(oracle::read_ragged(c, "dY")));
    check_grads(m.layer<0>().linear(), c, "l0");
    check_grads(m.layer<1>().linear(), c, "l1");
}

TEST_CASE("residual: oracle vs Thinc (Floats2d)", "[combinators][oracle]") {
    Case c("residual_f2d");
    auto m = residual(Relu<4>());
    const Floats2d X = c.f2("X");
    m.initialize(X);
    set_from(m.layer(), c, "l0");
    auto r5_ = m.begin_update(X);
    [[maybe_unused]] auto& Y = r5_.first;
    [[maybe_unused]] auto& bp = r5_.second;
    check_close(c, "Y", Y);
    check_close(c, "Y", m.predict(X));
    check_close(c, "dX", bp(c.f2("dY")));
    check_grads(m.layer(), c, "l0");
}

TEMPLATE_TEST_CASE("residual: oracle vs Thinc (sequences, a zero-length one)", "[combinators][oracle]", Ragged,
                   Padded, List<Floats2d>) {
    using T = TestType;
    const std::string name = std::is_same_v<T, Ragged> ? "residual_ragged"
                             : std::is_same_v<T, Padded> ? "residual_padded"
                                                         : "residual_list";
    Case c(name);
    auto read = [&](const std::string& key) {
        if constexpr (std::is_same_v<T, Ragged>) return oracle::read_ragged(c, key);
        else if constexpr (std::is_same_v<T, Padded>) return oracle::read_padded(c, key);
        else return oracle::read_list(c, key);
    };
    auto m = residual(RowsLinear<T>(3, 3));
    const T X = read("X");
    m.initialize(X);
    set_from(m.layer().linear(), c, "l0");
    auto r6_ = m.begin_update(X);
    [[maybe_unused]] auto& Y = r6_.first;
    [[maybe_unused]] auto& bp = r6_.second;
    check_close(c, "Y", Y);
    check_close(c, "dX", bp(read("dY")));
    check_grads(m.layer().linear(), c, "l0");
}

TEST_CASE("bidirectional: oracle (Thinc's layers, the reversal Thinc means)", "[combinators][oracle]") {
    Case c("bidirectional");
    auto m = bidirectional(RowsLinear<Padded>(4, 3), RowsLinear<Padded>(4, 3));
    const Padded X = oracle::read_padded(c, "X");
    m.initialize(X);
    CHECK(m.get_dim("nO") == 8);
    set_from(m.l2r().linear(), c, "l2r");
    set_from(m.r2l().linear(), c, "r2l");
    auto r7_ = m.begin_update(X);
    [[maybe_unused]] auto& Y = r7_.first;
    [[maybe_unused]] auto& bp = r7_.second;
    check_close(c, "Y", Y);
    check_close(c, "Y", m.predict(X));
    check_close(c, "dX", bp(oracle::read_padded(c, "dY")));
    check_grads(m.l2r().linear(), c, "l2r");
    check_grads(m.r2l().linear(), c, "r2l");
}

TEST_CASE("siamese + CauchySimilarity: oracle vs Thinc", "[combinators][oracle]") {
    Case c("siamese");
    auto m = siamese(Relu<4>(), CauchySimilarity<4>());
    const std::pair<Floats2d, Floats2d> X{c.f2("X1"), c.f2("X2")};
    m.initialize(X);
    CHECK(m.get_dim("nI") == 3);
    CHECK(m.get_dim("nO") == 1);
    for (float w : m.similarity().get_param("W")) CHECK(w == 1.0f);  // Thinc's init
    set_from(m.layer(), c, "layer");
    set_from(m.similarity(), c, "sim");
    auto r8_ = m.begin_update(X);
    [[maybe_unused]] auto& Y = r8_.first;
    [[maybe_unused]] auto& bp = r8_.second;
    check_close(c, "Y", Y);
    check_close(c, "Y", m.predict(X));
    const auto dX = bp(oracle::read_array<Floats1d>(c, "dY"));
    check_close(c, "dX1", dX.first);
    check_close(c, "dX2", dX.second);
    check_grads(m.layer(), c, "layer");
    check_grads(m.similarity(), c, "sim");
}

// ---- gradient checks ----------------------------------------------------------------------
TEST_CASE("gradcheck: add, concatenate, residual on Floats2d", "[combinators][gradcheck]") {
    const Floats2d X = random2d(6, 3, 1);
    SECTION("add") {
        auto m = Relu<4>() + Linear<4>() + Sigmoid<4>();
        m.initialize(X);
        testing::randomize_params(m, 11);
        testing::require_gradients(m, X);
    }
    SECTION("concatenate") {
        auto m = Relu<4>() | Linear<2>() | Sigmoid<3>();
        m.initialize(X);
        testing::randomize_params(m, 12);
        testing::require_gradients(m, X);
    }
    SECTION("residual") {
        auto m = residual(Sigmoid<3>());
        m.initialize(X);
        testing::randomize_params(m, 13);
        testing::require_gradients(m, X);
    }
    SECTION("chain of combinators") {
        auto m = Relu<5>() >> (residual(Sigmoid<>()) | (Linear<2>() + Sigmoid<2>())) >> Linear<3>();
        m.initialize(X);
        testing::randomize_params(m, 14);
        testing::require_gradients(m, X);
    }
}

TEST_CASE("gradcheck: combinators on sequences", "[combinators][gradcheck]") {
    SECTION("concatenate, Ragged") {
        auto m = RowsLinear<Ragged>(4, 3) | RowsLinear<Ragged>(2, 3);
        const Ragged X = random_ragged({2, 0, 3}, 3, 2);
        m.initialize(X);
        testing::randomize_params(m, 21);
        testing::require_gradients(m, X);
    }
    SECTION("concatenate, List") {
        auto m = RowsLinear<List<Floats2d>>(4, 3) | RowsLinear<List<Floats2d>>(2, 3);
        const auto X = random_list({2, 0, 3}, 3, 3);
        m.initialize(X);
        testing::randomize_params(m, 22);
        testing::require_gradients(m, X);
    }
    SECTION("concatenate and add, Padded") {
        const Padded X = to_padded(random_list({2, 4, 0}, 3, 4));
        auto m = RowsLinear<Padded>(4, 3) | (RowsLinear<Padded>(2, 3) + RowsLinear<Padded>(2, 3));
        m.initialize(X);
        testing::randomize_params(m, 23);
        testing::require_gradients(m, X);
    }
    SECTION("residual, Ragged / Padded / List") {
        auto r = residual(RowsLinear<Ragged>(3, 3));
        const Ragged Xr = random_ragged({3, 0, 2}, 3, 5);
        r.initialize(Xr);
        testing::randomize_params(r, 24);
        testing::require_gradients(r, Xr);
        auto p = residual(RowsLinear<Padded>(3, 3));
        const Padded Xp = to_padded(random_list({3, 0, 2}, 3, 6));
        p.initialize(Xp);
        testing::randomize_params(p, 25);
        testing::require_gradients(p, Xp);
        auto l = residual(RowsLinear<List<Floats2d>>(3, 3));
        const auto Xl = random_list({3, 0, 2}, 3, 7);
        l.initialize(Xl);
        testing::randomize_params(l, 26);
        testing::require_gradients(l, Xl);
    }
    SECTION("bidirectional") {
        auto m = bidirectional(RowsLinear<Padded>(4, 3));
        const Padded X = to_padded(random_list({2, 4, 0, 3}, 3, 8));
        m.initialize(X);
        testing::randomize_params(m, 27);
        testing::require_gradients(m, X);
        auto cs = bidirectional(CumSum());
        cs.initialize(X);
        testing::require_gradients(cs, X);
    }
    SECTION("siamese + CauchySimilarity") {
        auto m = siamese(Relu<4>(), CauchySimilarity<4>());
        const std::pair<Floats2d, Floats2d> X{random2d(5, 3, 9), random2d(5, 3, 10)};
        m.initialize(X);
        testing::randomize_params(m, 28);
        for (float& w : m.similarity().get_param("W")) w = std::abs(w) + 0.2f;
        testing::require_gradients(m, X);
        CauchySimilarity<> cauchy;
        cauchy.initialize(X);
        testing::randomize_params(cauchy, 29);
        testing::require_gradients(cauchy, X);
    }
}

// ---- laws ---------------------------------------------------------------------------------
TEST_CASE("law: concatenate's output width is the sum of its layers'", "[combinators][law]") {
    const Floats2d X = random2d(4, 3, 1);
    auto m = Relu<4>() | Relu<>(DenseOptions{.nO = 6}) | Linear<2>();
    static_assert(decltype(m)::static_nO == dyn);  // one width is known only at run time
    m.initialize(X);
    CHECK(m.get_dim("nO") == 12);
    CHECK(m.predict(X).shape(1) == 12);
    auto s = Relu<4>() | Relu<6>() | Linear<2>();
    static_assert(decltype(s)::static_nO == 12);
    s.initialize(X);
    CHECK(s.predict(X).shape(1) == 12);
    // Ragged and List: the lengths are kept, the widths summed.
    auto r = noop<Ragged>() | RowsLinear<Ragged>(2, 3);
    const Ragged R = random_ragged({1, 0, 2}, 3, 2);
    r.initialize(R);
    const Ragged Y = r.predict(R);
    CHECK(Y.data().shape(1) == 5);
    CHECK(std::equal(Y.lengths().begin(), Y.lengths().end(), R.lengths().begin()));
    auto l = noop<List<Floats2d>>() | noop<List<Floats2d>>();
    const auto L = random_list({2, 0}, 3, 3);
    const auto YL = l.predict(L);
    REQUIRE(YL.size() == 2);
    CHECK(YL[0].shape() == std::array<std::size_t, 2>{2, 6});
    CHECK(YL[1].shape() == std::array<std::size_t, 2>{0, 6});
    CHECK(YL[0](1, 4) == L[0](1, 1));
}

TEST_CASE("law: residual keeps the width and requires nO == nI", "[combinators][law]") {
    const Floats2d X = random2d(4, 3, 1);
    auto m = residual(Relu<>());  // nO is inferred: it must be nI
    m.initialize(X);
    CHECK(m.layer().get_dim("nO") == 3);
    CHECK(m.get_dim("nO") == 3);
    CHECK(m.predict(X).shape() == X.shape());
    // Y = X + f(X): with f = noop, Y = 2X.
    auto twice = residual(noop());
    const Floats2d Y2 = twice.predict(X);
    for (std::size_t i = 0; i < X.size(); ++i) CHECK(Y2[i] == 2.0f * X[i]);
    // A width known only at run time that differs: E162.
    auto bad = residual(Relu<>(DenseOptions{.nO = 5}));
    CHECK(error_id([&] { bad.initialize(X); }) == "tenon-E162");
}

TEST_CASE("law: add requires equal widths", "[combinators][law]") {
    const Floats2d X = random2d(4, 3, 1);
    auto ok = Relu<4>() + Relu<>();  // the dyn one gets 4
    ok.initialize(X);
    CHECK(ok.layer<1>().get_dim("nO") == 4);
    CHECK(ok.predict(X).shape(1) == 4);
    auto bad = Relu<>(DenseOptions{.nO = 4}) + Relu<>(DenseOptions{.nO = 5});
    CHECK(error_id([&] { bad.initialize(X); }) == "tenon-E160");
    // The sum is the sum.
    auto two = noop() + noop();
    const Floats2d Y = two.predict(X);
    for (std::size_t i = 0; i < X.size(); ++i) CHECK(Y[i] == 2.0f * X[i]);
    // add(noop(), Linear) initialises in either order (Thinc fails for noop first).
    auto nl = noop() + Linear<>();
    nl.initialize(X);
    CHECK(nl.layer<1>().get_dim("nO") == 3);
}

TEST_CASE("law: clone(f, n) is n distinct copies chained", "[combinators][law]") {
    const Floats2d X = random2d(4, 5, 1);
    auto m = clone(Relu<5>(), 3);
    m.initialize(X);
    REQUIRE(m.size() == 3);
    std::set<std::uint64_t> ids{m.id()};
    for (std::size_t i = 0; i < 3; ++i) ids.insert(m[i].id());
    CHECK(ids.size() == 4);
    for (std::size_t i = 0; i < 3; ++i)
        for (std::size_t j = i + 1; j < 3; ++j) {
            auto a = m[i].get_param("W"), b = m[j].get_param("W");
            CHECK(!std::equal(a.begin(), a.end(), b.begin()));
        }
    // Chained: clone(f, 3)(X) = f2(f1(f0(X))).
    const Floats2d Y = m.predict(X);
    const Floats2d Z = m[2].predict(m[1].predict(m[0].predict(X)));
    CHECK(std::equal(Y.begin(), Y.end(), Z.begin()));
    CHECK_THAT(describe(m), Contains("clone(relu x3)"));
}

TEST_CASE("law: noop is the identity for any data type, and checks dY", "[combinators][law]") {
    const Ragged R = random_ragged({2, 0, 1}, 3, 1);
    const Padded P = to_padded(random_list({2, 1}, 3, 2));
    const auto L = random_list({2, 0}, 3, 3);
    // (The models outlive their backprops: a backprop whose model is gone refuses, tenon-E172.)
    auto nR = noop<Ragged>();
    auto r9_ = nR.begin_update(R);
    [[maybe_unused]] auto& YR = r9_.first;
    [[maybe_unused]] auto& bR = r9_.second;
    CHECK(std::equal(YR.data().begin(), YR.data().end(), R.data().begin()));
    CHECK(bR(R).lengths().size() == 3);
    auto nP = noop<Padded>();
    auto r10_ = nP.begin_update(P);
    [[maybe_unused]] auto& YP = r10_.first;
    [[maybe_unused]] auto& bP = r10_.second;
    CHECK(std::equal(YP.data().begin(), YP.data().end(), P.data().begin()));
    auto nL = noop<List<Floats2d>>();
    auto r11_ = nL.begin_update(L);
    [[maybe_unused]] auto& YL = r11_.first;
    [[maybe_unused]] auto& bL = r11_.second;
    CHECK(YL.size() == 2);
    // A dY of another shape: E166, not a silent pass-through.
    auto n2 = noop();
    auto r12_ = n2.begin_update(random2d(4, 3, 4));
    [[maybe_unused]] auto& Y = r12_.first;
    [[maybe_unused]] auto& b = r12_.second;
    CHECK(error_id([&] { b(random2d(4, 2, 5)); }) == "tenon-E166");
    CHECK(error_id([&] { bR(random_ragged({3}, 3, 6)); }) == "tenon-E166");
    CHECK(error_id([&] { bL(random_list({2, 1}, 3, 7)); }) == "tenon-E166");
}

TEST_CASE("law: bidirectional runs r2l on the sequences reversed within their lengths", "[combinators][law]") {
    // l2r = r2l = cumulative sum over time: the first half is the prefix sums, the second
    // the suffix sums (r2l's output is turned back to the input's order); padding untouched.
    List<Floats2d> xs;
    xs.push_back(Floats2d({3, 1}, {1.0f, 2.0f, 4.0f}));
    xs.push_back(Floats2d({0, 1}));
    xs.push_back(Floats2d({2, 1}, {10.0f, 20.0f}));
    const Padded X = to_padded(xs);
    auto m = bidirectional(CumSum());
    m.initialize(X);
    const List<Floats2d> Y = to_list(m.predict(X));
    REQUIRE(Y.size() == 3);
    const std::vector<float> want0{1, 7, 3, 6, 7, 4}, want2{10, 30, 30, 20};
    CHECK(std::vector<float>(Y[0].begin(), Y[0].end()) == want0);
    CHECK(Y[1].shape() == std::array<std::size_t, 2>{0, 2});
    CHECK(std::vector<float>(Y[2].begin(), Y[2].end()) == want2);
    // r2l is a copy of l2r: a new node with its own weights once initialised.
    auto b = bidirectional(RowsLinear<Padded>(2, 1));
    b.initialize(X);
    CHECK(b.l2r().id() != b.r2l().id());
    auto w1 = b.l2r().linear().get_param("W"), w2 = b.r2l().linear().get_param("W");
    CHECK(!std::equal(w1.begin(), w1.end(), w2.begin()));
    CHECK(b.name() == "birows");
}

// ---- in a chain ---------------------------------------------------------------------------
TEST_CASE("chain: Relu<8> >> (Relu<4> | Relu<6>) >> Softmax<3> propagates widths and trains",
          "[combinators][chain]") {
    fix_random_seed(0);
    const std::size_t n = 64;
    Floats2d X = random2d(n, 5, 1);
    Ints1d y({n});
    for (std::size_t i = 0; i < n; ++i) y[i] = X(i, 0) + X(i, 1) > 0.3f ? 0 : X(i, 2) > 0.0f ? 1 : 2;
    auto model = Relu<8>() >> (Relu<4>() | Relu<6>()) >> Softmax<3>();
    model.initialize(X, to_categorical(y, 3));
    CHECK(model.layer<1>().get_dim("nO") == 10);
    CHECK(model.layer<1>().layer<0>().get_dim("nI") == 8);
    const std::string d = describe(model);
    CHECK_THAT(d, Contains("relu|relu nO=10(static) nI=8(static)"));
    CHECK_THAT(d, Contains("    relu nO=6(static) nI=8(static)"));
    // finish_update reaches the children's parameters (walk goes through the combinator).
    std::size_t nodes_with_W = 0;
    for (Node* node : model.walk()) nodes_with_W += node->has_param("W");
    CHECK(nodes_with_W == 4);
    Optimizer opt = Adam(0.02);
    CategoricalCrossentropy loss;
    const double before = loss.get_loss(model.predict(X), y);
    for (int step = 0; step < 150; ++step) {
        auto r13_ = model.begin_update(X);
        [[maybe_unused]] auto& P = r13_.first;
        [[maybe_unused]] auto& backprop = r13_.second;
        backprop(loss.get_grad(P, y));
        model.finish_update(opt);
    }
    const double after = loss.get_loss(model.predict(X), y);
    INFO("loss " << before << " -> " << after);
    CHECK(after < 0.5 * before);
}

TEST_CASE("describe shows the combinators' children", "[combinators]") {
    auto s = siamese(Relu<4>(), CauchySimilarity<4>());
    const std::string d = describe(s);
    CHECK_THAT(d, Contains("siamese(relu, cauchy_similarity)"));
    CHECK_THAT(d, Contains("  relu nO=4(static)"));
    CHECK_THAT(d, Contains("  cauchy_similarity nI=4(static) nO=1(static)"));
    auto r = residual(Relu<4>());
    CHECK_THAT(describe(r), Contains("residual(relu) nO=4(static) nI=4(static) [not initialized]\n  relu"));
}

// ---- edge cases and errors ----------------------------------------------------------------
TEST_CASE("edge cases: empty batches", "[combinators][edge]") {
    const Floats2d X({0, 3});
    auto a = Relu<4>() + Linear<4>();
    a.initialize(random2d(2, 3, 1));
    auto r14_ = a.begin_update(X);
    [[maybe_unused]] auto& Ya = r14_.first;
    [[maybe_unused]] auto& ba = r14_.second;
    CHECK(Ya.shape() == std::array<std::size_t, 2>{0, 4});
    CHECK(ba(Ya).shape() == std::array<std::size_t, 2>{0, 3});
    auto c = Relu<4>() | Linear<2>();
    c.initialize(random2d(2, 3, 1));
    auto r15_ = c.begin_update(X);
    [[maybe_unused]] auto& Yc = r15_.first;
    [[maybe_unused]] auto& bc = r15_.second;
    CHECK(Yc.shape() == std::array<std::size_t, 2>{0, 6});
    CHECK(bc(Yc).shape() == std::array<std::size_t, 2>{0, 3});
    auto r = residual(Relu<3>());
    r.initialize(random2d(2, 3, 1));
    CHECK(r.predict(X).shape() == std::array<std::size_t, 2>{0, 3});
    // No sequences at all.
    const Ragged R(Floats2d({0, 3}), Ints1d({0}));
    auto cr = RowsLinear<Ragged>(2, 3) | RowsLinear<Ragged>(1, 3);
    cr.initialize(R);
    auto r16_ = cr.begin_update(R);
    [[maybe_unused]] auto& YR = r16_.first;
    [[maybe_unused]] auto& bR = r16_.second;
    CHECK(YR.data().shape() == std::array<std::size_t, 2>{0, 3});
    CHECK(bR(YR).data().shape() == std::array<std::size_t, 2>{0, 3});
    const Padded P = to_padded(List<Floats2d>{});
    auto bi = bidirectional(CumSum());
    bi.initialize(P);
    auto r17_ = bi.begin_update(P);
    [[maybe_unused]] auto& YP = r17_.first;
    [[maybe_unused]] auto& bP = r17_.second;
    CHECK(YP.size() == 0);
    CHECK(bP(YP).size() == 0);
    auto s = siamese(Relu<4>(), CauchySimilarity<4>());
    s.initialize(std::pair<Floats2d, Floats2d>{random2d(2, 3, 1), random2d(2, 3, 2)});
    CHECK(s.predict(std::pair<Floats2d, Floats2d>{X, X}).shape(0) == 0);
}

TEST_CASE("errors: wrong shapes at run time name the combinator", "[combinators][edge]") {
    const Floats2d X = random2d(4, 3, 1);
    auto a = Relu<4>() + Linear<4>();
    a.initialize(X);
    auto r18_ = a.begin_update(X);
    [[maybe_unused]] auto& Ya = r18_.first;
    [[maybe_unused]] auto& ba = r18_.second;
    CHECK(error_id([&] { ba(random2d(4, 5, 2)); }) == "tenon-E160");
    auto c = Relu<4>() | Linear<2>();
    c.initialize(X);
    auto r19_ = c.begin_update(X);
    [[maybe_unused]] auto& Yc = r19_.first;
    [[maybe_unused]] auto& bc = r19_.second;
    CHECK(error_id([&] { bc(random2d(4, 5, 2)); }) == "tenon-E161");
    CHECK(error_id([&] { bc(random2d(3, 6, 2)); }) == "tenon-E161");
    auto r = residual(Relu<3>());
    r.initialize(X);
    auto r20_ = r.begin_update(X);
    [[maybe_unused]] auto& Yr = r20_.first;
    [[maybe_unused]] auto& br = r20_.second;
    CHECK(error_id([&] { br(random2d(4, 2, 2)); }) == "tenon-E162");
    auto bi = bidirectional(CumSum());
    const Padded P = to_padded(random_list({2, 1}, 3, 3));
    bi.initialize(P);
    auto r21_ = bi.begin_update(P);
    [[maybe_unused]] auto& YP = r21_.first;
    [[maybe_unused]] auto& bP = r21_.second;
    CHECK(error_id([&] { bP(P); }) == "tenon-E163");  // width 3, not 6
    // The expected gradient in the words of the found one (it was "layout [3, 2, 2, 6, 2, 1]").
    CHECK_THROWS_WITH(bP(P), Contains("expected a gradient shaped like the output, Padded (2, 2, 6) lengths [2, 1], "
                                      "but found Padded (2, 2, 3) lengths [2, 1]"));
    auto cat = concatenate(Relu<2>(), Relu<3>());
    const Floats2d Xc = random2d(4, 3, 5);
    cat.initialize(Xc);
    auto [Ycat, bcat] = cat.begin_update(Xc);
    CHECK_THROWS_WITH(bcat(random2d(4, 4, 1)), Contains("expected a gradient shaped like the output, (4, 5), but found (4, 4)"));
    CauchySimilarity<3> cs;
    cs.initialize();
    CHECK(error_id([&] { cs.predict(std::pair<Floats2d, Floats2d>{random2d(4, 3, 1), random2d(3, 3, 2)}); }) ==
          "tenon-E165");
    auto r22_ = cs.begin_update(std::pair<Floats2d, Floats2d>{X, X});
    [[maybe_unused]] auto& Ys = r22_.first;
    [[maybe_unused]] auto& bs = r22_.second;
    CHECK(error_id([&] { bs(Floats1d({3})); }) == "tenon-E165");
    // Inputs of the wrong width reach the layer inside, which says so.
    CHECK(error_id([&] { (void)c.predict(random2d(4, 5, 1)); }) == "tenon-E101");
    // The message names the combinator and the shapes.
    try {
        bc(random2d(4, 5, 2));
    } catch (const Error& e) {
        CHECK_THAT(e.what(), Contains("relu|linear: backprop") && Contains("(4, 6)") && Contains("(4, 5)"));
    }
}

TEST_CASE("copies of combinators are new nodes with copies of the children", "[combinators]") {
    auto m = Relu<4>() | Relu<2>();
    m.initialize(random2d(2, 3, 1));
    auto copy = m;
    CHECK(copy.id() != m.id());
    CHECK(copy.layer<0>().id() != m.layer<0>().id());
    CHECK(copy.is_initialized());
    auto w1 = m.layer<0>().get_param("W"), w2 = copy.layer<0>().get_param("W");
    CHECK(std::equal(w1.begin(), w1.end(), w2.begin()));
    // A combinator of initialised (trained) layers is ready to use.
    auto ready = residual(Relu<3>().initialize(random2d(2, 3, 1)));
    CHECK(ready.is_initialized());
    CHECK(ready.predict(random2d(2, 3, 2)).shape(1) == 3);
}

// The shared data operations of the combinators (include/tenon/combinators/detail/data_ops.hpp)
// on their own: the layouts that must agree, sums, concatenation and its inverse, reversal.
TEST_CASE("data_ops: layouts, sums, concatenation and reversal", "[combinators][data_ops]") {
    const Ragged r = random_ragged({2, 0, 3}, 3, 40);
    CHECK(detail::layout_of(r) == detail::Layout{2, 5, 3, 2, 0, 3});
    CHECK(detail::layout_str(r) == "Ragged (5, 3) lengths [2, 0, 3]");
    CHECK(detail::layout_of(Floats2d({4, 2})) != detail::layout_of(Floats2d({2, 4})));

    // Sums: elementwise, and a clear error (with the caller's name and id) on other layouts.
    Floats2d acc = random2d(3, 2, 41);
    const Floats2d x = random2d(3, 2, 42), before = acc;
    detail::add_into(acc, x, "test", "tenon-E160");
    for (std::size_t i = 0; i < acc.size(); ++i) CHECK(acc[i] == before[i] + x[i]);
    CHECK(error_id([&] { detail::add_into(acc, random2d(2, 3, 43), "test", "tenon-E160"); }) == "tenon-E160");
    List<Floats2d> la = random_list({2, 1}, 2, 44);
    CHECK(error_id([&] { detail::add_into(la, random_list({2}, 2, 45), "test", "tenon-E160"); }) == "tenon-E160");

    // Concatenation along the last axis, undone by slicing; lengths must agree.
    const Ragged a = random_ragged({2, 0, 3}, 3, 46), b = random_ragged({2, 0, 3}, 2, 47);
    const Ragged ab = detail::concat_last<Ragged>({&a, &b}, "test", "tenon-E161");
    CHECK(detail::width_of(ab) == 5);
    CHECK(ab.lengths()[2] == 3);
    const Ragged a2 = detail::slice_value<Ragged>(ab, 0, 3), b2 = detail::slice_value<Ragged>(ab, 3, 2);
    CHECK(std::equal(a2.data().begin(), a2.data().end(), a.data().begin()));
    CHECK(std::equal(b2.data().begin(), b2.data().end(), b.data().begin()));
    const Ragged other = random_ragged({1, 4}, 2, 48);
    CHECK(error_id([&] { detail::concat_last<Ragged>({&a, &other}, "test", "tenon-E161"); }) == "tenon-E161");

    // Reversal within lengths: step t of a sequence of length n becomes step n - 1 - t, the
    // padding stays, and reversing twice gives the input back.
    const Padded p = to_padded(random_list({3, 1, 2}, 2, 49));
    const Padded q = detail::reverse_in_lengths(p);
    for (std::size_t b = 0; b < p.size(); ++b) {
        const auto n = static_cast<std::size_t>(p.lengths()[b]);
        for (std::size_t t = 0; t < n; ++t) CHECK(q.data()(t, b, 1) == p.data()(n - 1 - t, b, 1));
    }
    const Padded back = detail::reverse_in_lengths(q);
    CHECK(std::equal(back.data().begin(), back.data().end(), p.data().begin()));
}
