// Training end to end: a 12-16-16-5 MLP learns a separable problem with Adam and with SGD;
// the same seed gives bitwise the same weights; batching; to_categorical; the losses.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <optional>
#include <set>
#include <vector>

#include "tenon/tenon.hpp"

using namespace tenon;
using Catch::Matchers::Contains;

namespace {
constexpr std::size_t kClasses = 5, kFeatures = 12;

// Five well-separated Gaussian blobs in 12 dims.
struct Problem {
    Floats2d X;
    Ints1d y;
};
Problem make_problem(std::size_t n, std::uint64_t seed) {
    Rng rng(seed);
    Floats2d centers({kClasses, kFeatures});
    Rng crng(1234);  // the same centers for every split
    for (float& c : centers) c = static_cast<float>(crng.uniform(-2.0, 2.0));
    Problem p{Floats2d({n, kFeatures}), Ints1d({n})};
    for (std::size_t i = 0; i < n; ++i) {
        const auto c = static_cast<std::size_t>(rng.below(kClasses));
        p.y[i] = static_cast<std::int32_t>(c);
        for (std::size_t j = 0; j < kFeatures; ++j)
            p.X(i, j) = centers(c, j) + static_cast<float>(0.5 * rng.normal());
    }
    return p;
}

auto make_mlp(double dropout = 0.0) {
    std::optional<double> d;
    if (dropout > 0) d = dropout;
    return Relu<16>({.dropout = d}) >> Relu<16>({.dropout = d}) >> Softmax<kClasses>();
}

template <class M>
double accuracy(const M& model, const Problem& p) {
    const Floats2d P = model.predict(p.X);
    std::size_t right = 0;
    for (std::size_t i = 0; i < P.shape(0); ++i) {
        const auto row = P.row(i);
        const auto best = std::max_element(row.begin(), row.end()) - row.begin();
        right += best == p.y[i];
    }
    return double(right) / double(P.shape(0));
}

// Trains for `steps` minibatch updates; returns the full-data loss before and after.
template <class M>
std::pair<double, double> train(M& model, Optimizer& opt, const Problem& p, int steps, std::size_t batch = 32) {
    CategoricalCrossentropy loss;
    const double before = loss.get_loss(model.predict(p.X), p.y);
    int done = 0;
    while (done < steps)
        for (auto [X, y] : multibatch(batch, p.X, p.y, shuffle)) {
            auto [P, backprop] = model.begin_update(X);
            backprop(loss.get_grad(P, y));
            model.finish_update(opt);
            if (++done == steps) break;
        }
    return {before, loss.get_loss(model.predict(p.X), p.y)};
}

std::vector<float> all_weights(Node& model) {
    std::vector<float> out;
    for (Node* n : model.walk())
        for (const auto& name : n->param_names())
            if (n->has_param(name)) {
                auto p = n->get_param(name);
                out.insert(out.end(), p.begin(), p.end());
            }
    return out;
}
}  // namespace

TEST_CASE("training: the 12-16-16-5 MLP learns with Adam", "[training]") {
    const Problem train_set = make_problem(256, 1), test_set = make_problem(200, 2);
    fix_random_seed(0);
    auto model = make_mlp();
    model.initialize(train_set.X, to_categorical(train_set.y, kClasses));
    CHECK(model.layer<0>().get_dim("nI") == kFeatures);
    Optimizer opt = Adam(0.01);
    const auto [before, after] = train(model, opt, train_set, 50);
    INFO("loss " << before << " -> " << after);
    CHECK(before == Approx(std::log(5.0)).epsilon(0.01));  // zero-initialised softmax: uniform guesses
    CHECK(after < 0.5 * before);
    CHECK(accuracy(model, test_set) > 0.9);
    // The averaged weights are a good model too.
    UseAverages avg(model, opt);
    CHECK(accuracy(model, test_set) > 0.8);
}

TEST_CASE("training: the MLP learns with SGD", "[training]") {
    const Problem train_set = make_problem(256, 3), test_set = make_problem(200, 4);
    fix_random_seed(1);
    auto model = make_mlp();
    model.initialize(train_set.X, to_categorical(train_set.y, kClasses));
    Optimizer opt = SGD(0.1);
    const auto [before, after] = train(model, opt, train_set, 100);
    INFO("loss " << before << " -> " << after);
    CHECK(after < 0.5 * before);
    CHECK(accuracy(model, test_set) > 0.9);
}

TEST_CASE("training: loss decreases step by step on the whole batch", "[training]") {
    const Problem p = make_problem(128, 5);
    fix_random_seed(2);
    auto model = make_mlp();
    model.initialize(p.X, to_categorical(p.y, kClasses));
    Optimizer opt = Adam(0.005);
    CategoricalCrossentropy loss;
    std::vector<double> losses;
    for (int step = 0; step < 50; ++step) {
        auto [P, backprop] = model.begin_update(p.X);
        losses.push_back(loss.get_loss(P, p.y));
        backprop(loss.get_grad(P, p.y));
        model.finish_update(opt);
    }
    // Full-batch Adam with a small rate: mostly monotone, and much lower at the end.
    int rises = 0;
    for (std::size_t i = 1; i < losses.size(); ++i) rises += losses[i] > losses[i - 1];
    CHECK(rises <= 5);
    CHECK(losses.back() < 0.5 * losses.front());
}

TEST_CASE("training: the same seed gives bitwise the same weights", "[training]") {
    const Problem p = make_problem(100, 6);
    auto run = [&](std::uint64_t seed) {
        fix_random_seed(seed);
        auto model = make_mlp(0.2);  // dropout and shuffling draw from the generator too
        model.initialize(p.X, to_categorical(p.y, kClasses));
        Optimizer opt = Adam(0.01);
        train(model, opt, p, 20, 16);
        return all_weights(model);
    };
    const auto a = run(7), b = run(7), c = run(8);
    REQUIRE(a.size() == b.size());
    CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
    CHECK(a != c);
}

TEST_CASE("training: minibatch and multibatch", "[training][batching]") {
    // Row i of X holds i (and i + 0.5); y[i] = 1000 + i: alignment is checkable after shuffling.
    const std::size_t n = 10;
    Floats2d X({n, 2});
    Ints1d y({n});
    for (std::size_t i = 0; i < n; ++i) {
        X(i, 0) = static_cast<float>(i);
        X(i, 1) = static_cast<float>(i) + 0.5f;
        y[i] = static_cast<std::int32_t>(1000 + i);
    }

    SECTION("in order, with a partial last batch") {
        auto batches = minibatch(4, X);
        CHECK(batches.size() == 3);
        std::vector<std::size_t> sizes;
        std::vector<float> seen;
        for (const auto& B : batches) {
            sizes.push_back(B.shape(0));
            CHECK(B.shape(1) == 2);
            for (std::size_t r = 0; r < B.shape(0); ++r) seen.push_back(B(r, 0));
        }
        CHECK(sizes == std::vector<std::size_t>{4, 4, 2});
        CHECK(seen == std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
    }
    SECTION("a batch size that divides the rows, and one larger than them") {
        CHECK(minibatch(5, X).size() == 2);
        CHECK(minibatch(1, X).size() == 10);
        auto one = minibatch(64, X);
        CHECK(one.size() == 1);
        for (const auto& B : one) CHECK(B.shape(0) == 10);
    }
    SECTION("shuffled: rows stay aligned and every row comes exactly once") {
        fix_random_seed(3);
        std::multiset<std::int32_t> seen;
        std::vector<std::int32_t> order;
        std::vector<std::size_t> sizes;
        for (auto [bx, by] : multibatch(3, X, y, shuffle)) {
            REQUIRE(bx.shape(0) == by.shape(0));
            sizes.push_back(bx.shape(0));
            for (std::size_t r = 0; r < bx.shape(0); ++r) {
                CHECK(by[r] == 1000 + static_cast<std::int32_t>(bx(r, 0)));
                CHECK(bx(r, 1) == bx(r, 0) + 0.5f);
                seen.insert(by[r]);
                order.push_back(by[r]);
            }
        }
        CHECK(sizes == std::vector<std::size_t>{3, 3, 3, 1});
        CHECK(seen.size() == n);
        for (std::size_t i = 0; i < n; ++i) CHECK(seen.count(static_cast<std::int32_t>(1000 + i)) == 1);
        CHECK_FALSE(std::is_sorted(order.begin(), order.end()));  // it did shuffle
        // The same seed, the same order; the source arrays are untouched.
        fix_random_seed(3);
        std::vector<std::int32_t> again;
        for (auto [bx, by] : multibatch(3, X, y, shuffle))
            for (std::size_t r = 0; r < by.shape(0); ++r) again.push_back(by[r]);
        CHECK(again == order);
        CHECK(X(4, 0) == 4.0f);
        CHECK(y[4] == 1004);
    }
    SECTION("three arrays, in order") {
        Floats2d Z({n, 1});
        for (std::size_t i = 0; i < n; ++i) Z(i, 0) = -static_cast<float>(i);
        std::size_t rows = 0;
        for (auto [bx, by, bz] : multibatch(4, X, y, Z)) {
            for (std::size_t r = 0; r < bx.shape(0); ++r) {
                CHECK(bz(r, 0) == -bx(r, 0));
                CHECK(by[r] == 1000 + static_cast<std::int32_t>(bx(r, 0)));
            }
            rows += bx.shape(0);
        }
        CHECK(rows == n);
        fix_random_seed(4);
        for (auto [bx, by, bz] : multibatch(4, X, y, Z, shuffle))
            for (std::size_t r = 0; r < bx.shape(0); ++r) CHECK(bz(r, 0) == -bx(r, 0));
    }
    SECTION("errors") {
        Ints1d short_y({n - 1});
        CHECK_THROWS_AS(multibatch(4, X, short_y), ShapeError);
        CHECK_THROWS_WITH(multibatch(4, X, short_y), Contains("9 rows") && Contains("10"));
        CHECK_THROWS_WITH(minibatch(0, X), Contains("batch size"));
    }
    SECTION("empty input: no batches") {
        Floats2d E({0, 2});
        auto b = minibatch(4, E);
        CHECK(b.size() == 0);
        CHECK(b.begin() == b.end());
    }
}

TEST_CASE("training: to_categorical", "[training][loss]") {
    const Ints1d labels({4}, {2, 0, 3, 2});
    const Floats2d T = to_categorical(labels, 4);
    REQUIRE(T.shape() == std::array<std::size_t, 2>{4, 4});
    for (std::size_t i = 0; i < 4; ++i)
        for (std::size_t c = 0; c < 4; ++c) CHECK(T(i, c) == (c == static_cast<std::size_t>(labels[i]) ? 1.0f : 0.0f));

    const Floats2d S = to_categorical(labels, 4, 0.3);
    for (std::size_t i = 0; i < 4; ++i) {
        double sum = 0;
        for (std::size_t c = 0; c < 4; ++c) {
            sum += S(i, c);
            CHECK(S(i, c) == Approx(c == static_cast<std::size_t>(labels[i]) ? 0.7 : 0.1));
        }
        CHECK(sum == Approx(1.0));
    }

    CHECK_THROWS_AS(to_categorical(Ints1d({2}, {1, 4}), 4), Error);
    CHECK_THROWS_WITH(to_categorical(Ints1d({2}, {1, 4}), 4),
                      Contains("label 4") && Contains("row 1") && Contains("[0, 4)"));
    CHECK_THROWS_WITH(to_categorical(Ints1d({1}, {-1}), 4), Contains("label -1"));
    CHECK_THROWS_AS(to_categorical(labels, 0), Error);
    CHECK_THROWS_WITH(to_categorical(labels, 4, 0.75), Contains("label_smoothing"));  // >= (n - 1) / n
    CHECK_THROWS_AS(to_categorical(labels, 4, -0.1), Error);
    // NaN is not in the range either (it failed no comparison before, and gave NaN rows).
    CHECK_THROWS_WITH(to_categorical(labels, 4, std::nan("")), Contains("tenon-E131") && Contains("nan"));
    CHECK_THROWS_WITH(CategoricalCrossentropy({.label_smoothing = std::nan("")}).get_grad(to_categorical(labels, 4), labels),
                      Contains("tenon-E131"));
    CHECK(to_categorical(Ints1d({0}), 3).shape() == std::array<std::size_t, 2>{0, 3});
}

TEST_CASE("training: CategoricalCrossentropy", "[training][loss]") {
    const Floats2d P({3, 3}, {0.7f, 0.2f, 0.1f,  //
                              0.1f, 0.1f, 0.8f,  //
                              0.3f, 0.4f, 0.3f});
    const Ints1d labels({3}, {0, 2, 1});
    const Floats2d T = to_categorical(labels, 3);
    CategoricalCrossentropy loss;

    // Integer labels and one-hot rows give the same gradient and loss.
    const Floats2d g_int = loss.get_grad(P, labels), g_hot = loss.get_grad(P, T);
    for (std::size_t i = 0; i < P.size(); ++i) {
        CHECK(g_int[i] == g_hot[i]);
        CHECK(g_int[i] == Approx((P[i] - T[i]) / 3.0f));
    }
    const double expected = -(std::log(0.7) + std::log(0.8) + std::log(0.4)) / 3.0;
    CHECK(loss.get_loss(P, labels) == Approx(expected));
    CHECK(loss.get_loss(P, T) == Approx(expected));
    auto [g, l] = loss(P, labels);
    CHECK(l == Approx(expected));
    CHECK(g(1, 2) == Approx((0.8 - 1.0) / 3.0));

    CategoricalCrossentropy unnormalised({.normalize = false});
    CHECK(unnormalised.get_grad(P, labels)(0, 0) == Approx(0.7 - 1.0));
    CHECK(unnormalised.get_loss(P, labels) == Approx(3.0 * expected));

    // Label smoothing applies to integer labels as to_categorical does.
    CategoricalCrossentropy smooth({.label_smoothing = 0.2});
    const Floats2d Ts = to_categorical(labels, 3, 0.2);
    const Floats2d gs = smooth.get_grad(P, labels);
    for (std::size_t i = 0; i < P.size(); ++i) CHECK(gs[i] == Approx((P[i] - Ts[i]) / 3.0f));

    // Errors.
    CHECK_THROWS_AS(loss.get_grad(P, Ints1d({2}, {0, 1})), ShapeError);
    CHECK_THROWS_AS(loss.get_grad(P, Floats2d({3, 4})), ShapeError);
    CHECK_THROWS_WITH(loss.get_grad(P, Floats2d({3, 4})), Contains("(3, 3)") && Contains("(3, 4)"));
    CHECK_THROWS_AS(loss.get_grad(P, Ints1d({3}, {0, 3, 1})), Error);  // label out of range
    const Floats2d logits({1, 3}, {2.0f, -1.0f, 0.5f});
    CHECK_THROWS_WITH(loss.get_grad(logits, Ints1d({1}, {0})), Contains("probabilities") && Contains("Softmax"));
}

TEST_CASE("training: L2Distance", "[training][loss]") {
    const Floats2d G({2, 2}, {1.0f, 2.0f, 3.0f, 4.0f});
    const Floats2d T({2, 2}, {0.0f, 2.5f, 3.0f, 2.0f});
    L2Distance loss;
    const Floats2d d = loss.get_grad(G, T);
    CHECK(d(0, 0) == Approx(0.5));
    CHECK(d(0, 1) == Approx(-0.25));
    CHECK(d(1, 0) == Approx(0.0));
    CHECK(d(1, 1) == Approx(1.0));
    CHECK(loss.get_loss(G, T) == Approx(0.5 * (1.0 + 0.25 + 0.0 + 4.0) / 2.0));
    L2Distance raw({.normalize = false});
    CHECK(raw.get_grad(G, T)(1, 1) == Approx(2.0));
    CHECK(raw.get_loss(G, T) == Approx(0.5 * 5.25));
    CHECK(loss.get_loss(G, G) == 0.0);
    CHECK_THROWS_AS(loss.get_grad(G, Floats2d({2, 3})), ShapeError);

    // The gradient is the derivative of the loss (finite differences).
    Floats2d Gp(G);
    for (std::size_t i = 0; i < Gp.size(); ++i) {
        const float s = Gp[i];
        Gp[i] = s + 1e-2f;
        const double lp = loss.get_loss(Gp, T);
        Gp[i] = s - 1e-2f;
        const double lm = loss.get_loss(Gp, T);
        Gp[i] = s;
        CHECK((lp - lm) / 2e-2 == Approx(d[i]).margin(1e-4));
    }

    // Regression with a Linear layer and L2Distance converges to the true weights.
    fix_random_seed(9);
    Floats2d X({64, 3});
    Floats2d Y({64, 1});
    Rng rng(4);
    for (std::size_t i = 0; i < 64; ++i) {
        for (std::size_t j = 0; j < 3; ++j) X(i, j) = static_cast<float>(rng.uniform(-1, 1));
        Y(i, 0) = 2.0f * X(i, 0) - X(i, 1) + 0.5f * X(i, 2) + 0.25f;
    }
    auto lin = Linear<1>();
    lin.initialize(X, Y);
    Optimizer opt = Adam(0.05);
    for (int step = 0; step < 300; ++step) {
        auto [Yh, bp] = lin.begin_update(X);
        bp(loss.get_grad(Yh, Y));
        lin.finish_update(opt);
    }
    const auto W = lin.get_param("W");
    CHECK(W.data[0] == Approx(2.0).margin(0.05));
    CHECK(W.data[1] == Approx(-1.0).margin(0.05));
    CHECK(W.data[2] == Approx(0.5).margin(0.05));
    CHECK(lin.get_param("b").data[0] == Approx(0.25).margin(0.05));
}

#if defined(__x86_64__)
#include <xmmintrin.h>
// The optimizer's pass runs with subnormals flushed (src/cpu/subnormals.hpp: they cost a
// microcode assist per value) and gives the caller's floating-point mode back unchanged.
TEST_CASE("training: the optimizer flushes subnormals inside its pass only", "[training]") {
    const unsigned saved = _mm_getcsr();
    for (const unsigned mode : {saved & ~0x8040u, saved | 0x8040u}) {
        _mm_setcsr(mode);
        Optimizer opt = Adam(0.001);
        Floats1d W({3}), G({3});
        W[0] = 1e-40f;  // subnormal: read as zero in the pass
        W[1] = 0.5f;
        W[2] = -2.0f;
        G[1] = 1e-3f;
        G[2] = -4e-3f;
        opt.update(1, "W", W, G);
        CHECK(W[0] == 0.0f);
        CHECK(W[1] < 0.5f);   // a positive gradient lowers the weight
        CHECK(W[2] > -2.0f);
        CHECK(G[1] == 0.0f);  // and the gradient is zeroed
        CHECK(_mm_getcsr() == mode);
    }
    _mm_setcsr(saved);
    volatile float tiny = 1e-30f;
    CHECK(tiny * 1e-10f != 0.0f);  // the test's own mode: subnormal results kept
}
#endif
