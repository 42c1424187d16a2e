// What each layer computes in its forward pass, against values worked out by hand or with a
// plain loop (the gradients are in test_gradcheck.cpp, Thinc's numbers in tests/oracle/).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "tenon/tenon.hpp"
#include "unit/helpers.hpp"

using namespace tenon;
using Catch::Matchers::Contains;

namespace {
using testing::random_array;

template <class M>
void randomize(M& model, std::uint64_t seed) {
    for (Node* n : model.walk())
        for (const auto& p : n->param_names())
            if (n->has_param(p)) {
                Rng rng(seed++);
                for (float& v : n->get_param(p)) v = static_cast<float>(rng.uniform(-1.0, 1.0));
            }
}

// Z = X W^T + b with a plain double loop.
Floats2d affine_ref(Node& layer, const Floats2d& X) {
    const auto W = layer.get_param("W");
    const auto b = layer.get_param("b");
    const std::size_t nO = W.shape[0], nI = W.shape[1];
    Floats2d Z({X.shape(0), nO});
    for (std::size_t r = 0; r < X.shape(0); ++r)
        for (std::size_t o = 0; o < nO; ++o) {
            double s = b.data[o];
            for (std::size_t i = 0; i < nI; ++i) s += double(W.data[o * nI + i]) * X(r, i);
            Z(r, o) = static_cast<float>(s);
        }
    return Z;
}

double mish_ref(double z) { return z >= 20.0 ? z : z * std::tanh(std::log1p(std::exp(z))); }
double sigmoid_ref(double z) { return 1.0 / (1.0 + std::exp(-std::clamp(z, -20.0, 20.0))); }
// The exact GELU (std::erf: Thinc's erf approximation is within 1.5e-7 of it).
double gelu_ref(double z) { return 0.5 * z * (1.0 + std::erf(z / std::sqrt(2.0))); }
double swish_ref(double z) { return z * sigmoid_ref(z); }
double hard_swish_ref(double z) { return z * std::clamp(0.2 * z + 0.5, 0.0, 1.0); }

// A dense activation layer against its reference function, on pre-activations spread over
// [-6, 6] and more (X in [-3, 3], 3 inputs).
template <class L, class F>
void check_dense_activation(L layer, F ref) {
    const Floats2d X = random_array(8, 3, 11, -3, 3);
    layer.initialize(X);
    randomize(layer, 12);
    const Floats2d P = layer.predict(X), Z = affine_ref(layer, X);
    for (std::size_t i = 0; i < P.size(); ++i) CHECK(P[i] == Approx(ref(Z[i])).margin(1e-5));
    auto [Y, bp] = layer.begin_update(X);
    for (std::size_t i = 0; i < P.size(); ++i) CHECK(Y[i] == P[i]);
}
// The gradient of an activation functor against a central difference of its forward (in
// double, away from the bends).
template <class A>
void check_activation_grad(A act, std::initializer_list<float> zs) {
    for (float z : zs) {
        const double h = 1e-3;
        const double fd = (double(act(float(z + h))) - double(act(float(z - h)))) / (2 * h);
        CHECK(act.grad(2.0f, act(z), z) == Approx(2.0 * fd).margin(2e-3));
    }
}
}  // namespace

TEST_CASE("layers: Linear", "[layers]") {
    auto l = Linear<2, 3>();
    l.initialize();
    l.set_param("W", param_view(Floats2d({2, 3}, {1, 2, 3, -1, 0, 1})));
    l.set_param("b", param_view(Floats1d({2}, {0.5f, -0.5f})));
    const Floats2d Y = l.predict(Floats2d({2, 3}, {1, 1, 1, 2, 0, -1}));
    CHECK(Y(0, 0) == Approx(6.5));
    CHECK(Y(0, 1) == Approx(-0.5));
    CHECK(Y(1, 0) == Approx(-0.5));
    CHECK(Y(1, 1) == Approx(-3.5));

    // A larger one against the reference loop (exercises the GEMM's blocking).
    auto big = Linear<37>();
    const Floats2d X = random_array(65, 29, 1);
    big.initialize(X);
    randomize(big, 2);
    const Floats2d P = big.predict(X), R = affine_ref(big, X);
    for (std::size_t i = 0; i < P.size(); ++i) REQUIRE(P[i] == Approx(R[i]).margin(1e-5));
}

TEST_CASE("layers: default initialisers", "[layers][init]") {
    fix_random_seed(0);
    auto l = Linear<30, 20>();
    l.initialize();
    const double limit = std::sqrt(6.0 / 50.0);
    double lo = 1, hi = -1;
    for (float w : l.get_param("W")) {
        lo = std::min(lo, double(w));
        hi = std::max(hi, double(w));
    }
    CHECK(lo >= -limit);
    CHECK(hi <= limit);
    CHECK(lo < -0.8 * limit);  // it fills the range
    CHECK(hi > 0.8 * limit);
    for (float b : l.get_param("b")) CHECK(b == 0.0f);
    // Thinc's defaults: Softmax and Sigmoid start with zero weights.
    auto sm = Softmax<4, 3>();
    sm.initialize();
    for (float w : sm.get_param("W")) CHECK(w == 0.0f);
    auto sg = Sigmoid<4, 3>();
    sg.initialize();
    for (float w : sg.get_param("W")) CHECK(w == 0.0f);
    // LayerNorm: G = 1, b = 0.
    auto ln = LayerNorm<5>();
    ln.initialize();
    for (float g : ln.get_param("G")) CHECK(g == 1.0f);
    for (float b : ln.get_param("b")) CHECK(b == 0.0f);
    // An initialiser given as an option.
    auto u = Linear<10, 10>({.init_W = uniform_init(2.0, 3.0), .init_b = uniform_init(-5.0, -4.0)});
    u.initialize();
    for (float w : u.get_param("W")) CHECK((w >= 2.0f && w < 3.0f));
    for (float b : u.get_param("b")) CHECK((b >= -5.0f && b < -4.0f));
    auto n = Linear<200, 50>({.init_W = normal_init(1.0)});
    n.initialize();
    double mean = 0, sq = 0;
    for (float w : n.get_param("W")) {
        mean += w;
        sq += double(w) * w;
    }
    mean /= 10000.0;
    CHECK(mean == Approx(1.0).margin(0.02));
    CHECK(std::sqrt(sq / 10000.0 - mean * mean) == Approx(std::sqrt(1.0 / 50.0)).epsilon(0.05));
}

TEST_CASE("layers: Relu", "[layers]") {
    auto r = Relu<2, 2>();
    r.initialize();
    r.set_param("W", param_view(Floats2d({2, 2}, {1, 0, 0, -1})));
    const Floats2d Y = r.predict(Floats2d({2, 2}, {3, 4, -3, -4}));
    CHECK(Y(0, 0) == 3.0f);
    CHECK(Y(0, 1) == 0.0f);
    CHECK(Y(1, 0) == 0.0f);
    CHECK(Y(1, 1) == 4.0f);

    auto big = Relu<16>();
    const Floats2d X = random_array(9, 7, 3);
    big.initialize(X);
    randomize(big, 4);
    const Floats2d P = big.predict(X), Z = affine_ref(big, X);
    std::size_t zeros = 0;
    for (std::size_t i = 0; i < P.size(); ++i) {
        CHECK(P[i] == Approx(std::max(Z[i], 0.0f)).margin(1e-5));
        zeros += P[i] == 0.0f;
    }
    CHECK(zeros > 0);
    CHECK(zeros < P.size());
}

TEST_CASE("layers: Relu with normalize: LayerNorm after the activation", "[layers]") {
    auto r = Relu<6>({.normalize = true});
    const Floats2d X = random_array(5, 4, 5);
    r.initialize(X);
    randomize(r, 6);
    auto ln_values = r.walk()[1]->get_param("G");
    for (float& g : ln_values) g = 1.0f;
    for (float& b : r.walk()[1]->get_param("b")) b = 0.0f;
    const Floats2d P = r.predict(X), Z = affine_ref(r, X);
    for (std::size_t row = 0; row < 5; ++row) {
        double mean = 0, var = 0;
        for (std::size_t c = 0; c < 6; ++c) mean += std::max(Z(row, c), 0.0f);
        mean /= 6;
        for (std::size_t c = 0; c < 6; ++c) var += std::pow(std::max(Z(row, c), 0.0f) - mean, 2);
        var /= 6;
        for (std::size_t c = 0; c < 6; ++c)
            CHECK(P(row, c) == Approx((std::max(Z(row, c), 0.0f) - mean) / std::sqrt(var + 1e-8)).margin(1e-4));
    }
}

TEST_CASE("layers: Sigmoid and sigmoid_activation", "[layers]") {
    auto s = Sigmoid<5>();
    const Floats2d X = random_array(4, 3, 7, -3, 3);
    s.initialize(X);
    randomize(s, 8);
    const Floats2d P = s.predict(X), Z = affine_ref(s, X);
    for (std::size_t i = 0; i < P.size(); ++i) CHECK(P[i] == Approx(sigmoid_ref(Z[i])).margin(1e-6));

    auto a = sigmoid_activation();
    const Floats2d V({1, 5}, {-30.0f, -1.0f, 0.0f, 2.0f, 30.0f});
    const Floats2d A = a.predict(V);
    CHECK(A(0, 2) == 0.5f);
    CHECK(A(0, 1) == Approx(sigmoid_ref(-1.0)));
    CHECK(A(0, 3) == Approx(sigmoid_ref(2.0)));
    // Clipped to [-20, 20], as Thinc.
    CHECK(A(0, 0) == Approx(sigmoid_ref(-20.0)).epsilon(1e-4));
    CHECK(A(0, 0) > 0.0f);
    CHECK(A(0, 4) == Approx(sigmoid_ref(20.0)));
    // Any width.
    CHECK(a.predict(random_array(2, 11, 1)).shape(1) == 11);
}

TEST_CASE("layers: Softmax", "[layers]") {
    auto sm = Softmax<4>();
    const Floats2d X = random_array(6, 3, 9);
    sm.initialize(X);
    // Zero weights: every class equally likely.
    for (float p : sm.predict(X)) CHECK(p == Approx(0.25f));
    randomize(sm, 10);
    const Floats2d P = sm.predict(X), Z = affine_ref(sm, X);
    for (std::size_t r = 0; r < 6; ++r) {
        double total = 0, denom = 0;
        for (std::size_t c = 0; c < 4; ++c) denom += std::exp(double(Z(r, c)));
        for (std::size_t c = 0; c < 4; ++c) {
            CHECK(P(r, c) == Approx(std::exp(double(Z(r, c))) / denom).margin(1e-6));
            total += P(r, c);
        }
        CHECK(total == Approx(1.0));
    }

    // Large logits do not overflow (shifted by the row maximum).
    Floats2d huge({1, 3}, {1000.0f, 999.0f, -1000.0f});
    Floats2d hp = huge;
    fn::softmax_row(hp.data(), 3, 1.0f);
    CHECK(hp(0, 0) == Approx(1.0 / (1.0 + std::exp(-1.0))));
    CHECK(hp(0, 2) == 0.0f);

    // Temperature: softmax(z / T).
    auto hot = Softmax<4>({.temperature = 2.0});
    hot.initialize(X);
    randomize(hot, 10);
    const Floats2d H = hot.predict(X);
    for (std::size_t r = 0; r < 6; ++r) {
        double denom = 0;
        for (std::size_t c = 0; c < 4; ++c) denom += std::exp(double(Z(r, c)) / 2.0);
        for (std::size_t c = 0; c < 4; ++c) CHECK(H(r, c) == Approx(std::exp(double(Z(r, c)) / 2.0) / denom).margin(1e-6));
    }

    // normalize_outputs = false: predict gives the logits, training still the probabilities.
    auto raw = Softmax<4>({.normalize_outputs = false});
    raw.initialize(X);
    randomize(raw, 10);
    const Floats2d L = raw.predict(X);
    for (std::size_t i = 0; i < L.size(); ++i) CHECK(L[i] == Approx(Z[i]).margin(1e-5));
    const Floats2d T = raw.begin_update(X).first;
    for (std::size_t i = 0; i < T.size(); ++i) CHECK(T[i] == Approx(P[i]).margin(1e-6));
    CHECK_FALSE(raw.normalize_outputs());
    CHECK(hot.temperature() == 2.0);
}

TEST_CASE("layers: Mish", "[layers]") {
    auto m = Mish<5>();
    const Floats2d X = random_array(4, 3, 11, -3, 3);
    m.initialize(X);
    randomize(m, 12);
    const Floats2d P = m.predict(X), Z = affine_ref(m, X);
    for (std::size_t i = 0; i < P.size(); ++i) CHECK(P[i] == Approx(mish_ref(Z[i])).margin(1e-5));
    CHECK(fn::Mish{}(0.0f) == 0.0f);
    CHECK(fn::Mish{}(25.0f) == 25.0f);  // the identity above the threshold
    CHECK(fn::Mish{}(-30.0f) == Approx(0.0).margin(1e-10));
    CHECK(fn::Mish{}(1.0f) == Approx(0.8650983882673103));
}

TEST_CASE("layers: Gelu", "[layers]") {
    check_dense_activation(Gelu<5>(), gelu_ref);
    CHECK(Gelu<>().name() == "gelu");
    const fn::Gelu g;
    CHECK(g(0.0f) == 0.0f);
    CHECK(g(1.0f) == Approx(0.8413447460685429).margin(2e-7));   // Phi(1), Thinc's erf
    CHECK(g(-1.0f) == Approx(-0.15865525393145707).margin(2e-7));
    CHECK(g(10.0f) == Approx(10.0).margin(1e-6));
    CHECK(g(-10.0f) == Approx(0.0).margin(1e-6));
    // Thinc's gradient: Phi(z) + z phi(z).
    CHECK(g.grad(1.0f, 0.0f, 0.0f) == Approx(0.5).margin(1e-7));
    CHECK(g.grad(1.0f, 0.0f, 1.0f) == Approx(0.8413447460685429 + 0.24197072451914337).margin(2e-7));
    CHECK(g.grad(1.0f, 0.0f, -30.0f) == 0.0f);
    CHECK(g.grad(1.0f, 0.0f, 30.0f) == Approx(1.0));
    check_activation_grad(g, {-4.0f, -1.5f, -0.3f, 0.2f, 0.9f, 2.5f, 5.0f});
}

TEST_CASE("layers: Swish", "[layers]") {
    check_dense_activation(Swish<5>(), swish_ref);
    CHECK(Swish<>().name() == "swish");
    const fn::Swish s;
    CHECK(s(0.0f) == 0.0f);
    CHECK(s(1.0f) == Approx(0.7310585786300049));
    CHECK(s(30.0f) == Approx(30.0 * sigmoid_ref(20.0)));  // the sigmoid's input clipped to 20
    CHECK(s(-30.0f) == Approx(-30.0 * sigmoid_ref(-20.0)));
    CHECK(s.grad(1.0f, 0.0f, 0.0f) == Approx(0.5));
    check_activation_grad(s, {-8.0f, -2.0f, -0.5f, 0.3f, 1.0f, 4.0f, 12.0f});
}

TEST_CASE("layers: HardSwish", "[layers]") {
    check_dense_activation(HardSwish<5>(), hard_swish_ref);
    CHECK(HardSwish<>().name() == "hardswish");
    const fn::HardSwish h;
    CHECK(h(0.0f) == 0.0f);
    CHECK(h(1.0f) == Approx(0.7));
    CHECK(h(3.0f) == 3.0f);   // the identity above 2.5
    CHECK(h(-3.0f) == 0.0f);  // 0 below -2.5
    // Thinc's backprop_hard_swish: 0.4 z + 0.5 in [-2.5, 2.5], 1 above, 0 below.
    CHECK(h.grad(2.0f, 0.0f, 1.0f) == Approx(1.8));
    CHECK(h.grad(2.0f, 0.0f, 2.5f) == Approx(3.0));
    CHECK(h.grad(2.0f, 0.0f, 2.6f) == 2.0f);
    CHECK(h.grad(2.0f, 0.0f, -2.5f) == Approx(-1.0));
    CHECK(h.grad(2.0f, 0.0f, -2.6f) == 0.0f);
    check_activation_grad(h, {-4.0f, -2.0f, -0.5f, 0.3f, 1.0f, 2.2f, 4.0f});
}

TEST_CASE("layers: Gelu, Swish and HardSwish start from he_normal_init", "[layers][init]") {
    fix_random_seed(3);
    const double sd = std::sqrt(2.0 / 50.0);  // sqrt(2 / nI)
    auto check_he = [&](Node& layer) {
        double mean = 0, sq = 0;
        for (float w : layer.get_param("W")) {
            mean += w;
            sq += double(w) * w;
        }
        mean /= 10000.0;
        CHECK(mean == Approx(0.0).margin(0.01));
        CHECK(std::sqrt(sq / 10000.0 - mean * mean) == Approx(sd).epsilon(0.05));
        for (float b : layer.get_param("b")) CHECK(b == 0.0f);
    };
    auto g = Gelu<200, 50>();
    g.initialize();
    check_he(g);
    auto s = Swish<200, 50>();
    s.initialize();
    check_he(s);
    auto h = HardSwish<200, 50>();
    h.initialize();
    check_he(h);
    // As an option of another layer.
    auto l = Linear<200, 50>({.init_W = he_normal_init});
    l.initialize();
    check_he(l);
}

TEST_CASE("layers: Gelu, Swish and HardSwish: normalize, dropout, empty batch", "[layers]") {
    fix_random_seed(4);
    auto g = Gelu<6>({.dropout = 0.5, .normalize = true});
    auto s = Swish<6>({.normalize = true});
    auto h = HardSwish<6>({.dropout = 0.2});
    const Floats2d X = random_array(5, 4, 13);
    g.initialize(X);
    s.initialize(X);
    h.initialize(X);
    auto names = [](Node& n) {
        std::vector<std::string> out;
        for (Node* c : n.walk()) out.push_back(c->name());
        return out;
    };
    CHECK(names(g) == std::vector<std::string>{"gelu", "layernorm", "dropout"});
    CHECK(names(s) == std::vector<std::string>{"swish", "layernorm"});
    CHECK(names(h) == std::vector<std::string>{"hardswish", "dropout"});
    // LayerNorm after the activation: each row of the output has mean 0 (G = 1, b = 0).
    const Floats2d Y = s.predict(X);
    for (std::size_t r = 0; r < Y.shape(0); ++r) {
        double m = 0;
        for (std::size_t c = 0; c < 6; ++c) m += Y(r, c);
        CHECK(m == Approx(0.0).margin(1e-5));
    }
    // An empty batch: (0, nO) out, (0, nI) back, no gradient.
    const Floats2d E({0, 4});
    CHECK(g.predict(E).shape(0) == 0);
    auto [Ye, bp] = h.begin_update(E);
    CHECK(Ye.shape(1) == 6);
    const Floats2d dX = bp(Floats2d({0, 6}));
    CHECK(dX.shape(0) == 0);
    CHECK(dX.shape(1) == 4);
}

TEST_CASE("layers: Maxout", "[layers]") {
    // nO = 2, nP = 3, nI = 2: W (2, 3, 2), b (2, 3).
    auto m = Maxout<2, 2, 3>();
    m.initialize();
    CHECK(m.get_dim("nP") == 3);
    CHECK(m.get_param("W").rank == 3);
    CHECK(m.get_param("W").shape[1] == 3);
    m.set_param("W", param_view(Floats3d({2, 3, 2}, {1, 0, 0, 1, -1, -1,  //
                                                     2, 0, 0, 0, 0, 2})));
    m.set_param("b", param_view(Floats2d({2, 3}, {0, 0, 0, 0, 1, 0})));
    const Floats2d Y = m.predict(Floats2d({2, 2}, {3, -1, -2, -2}));
    // Row 0: pieces of output 0: 3, -1, -2 -> 3; of output 1: 6, 1, -2 -> 6.
    CHECK(Y(0, 0) == 3.0f);
    CHECK(Y(0, 1) == 6.0f);
    // Row 1: output 0: -2, -2, 4 -> 4; output 1: -4, 1, -4 -> 1.
    CHECK(Y(1, 0) == 4.0f);
    CHECK(Y(1, 1) == 1.0f);

    // Ties go to the first piece: its gradient gets the whole dY.
    auto t = Maxout<1, 1, 2>();
    t.initialize();
    t.set_param("W", param_view(Floats3d({1, 2, 1}, {1, 1})));
    auto [Yt, bp] = t.begin_update(Floats2d({1, 1}, {2.0f}));
    CHECK(Yt(0, 0) == 2.0f);
    bp(Floats2d({1, 1}, {1.0f}));
    CHECK(t.get_grad("b").data[0] == 1.0f);
    CHECK(t.get_grad("b").data[1] == 0.0f);

    // Against the reference: the max over the pieces of X W^T + b.
    auto big = Maxout<4, dyn, 3>();
    const Floats2d X = random_array(5, 6, 13);
    big.initialize(X);
    randomize(big, 14);
    const Floats2d P = big.predict(X);
    const auto W = big.get_param("W");
    const auto b = big.get_param("b");
    for (std::size_t r = 0; r < 5; ++r)
        for (std::size_t o = 0; o < 4; ++o) {
            double best = -1e30;
            for (std::size_t p = 0; p < 3; ++p) {
                double s = b.data[o * 3 + p];
                for (std::size_t i = 0; i < 6; ++i) s += double(W.data[(o * 3 + p) * 6 + i]) * X(r, i);
                best = std::max(best, s);
            }
            CHECK(P(r, o) == Approx(best).margin(1e-5));
        }
}

TEST_CASE("layers: LayerNorm", "[layers]") {
    auto ln = LayerNorm<>();
    const Floats2d X = random_array(4, 7, 15, -5, 5);
    ln.initialize(X);
    CHECK(ln.get_dim("nI") == 7);
    CHECK(ln.get_dim("nO") == 7);
    const Floats2d Y = ln.predict(X);
    for (std::size_t r = 0; r < 4; ++r) {
        double mean = 0, var = 0;
        for (std::size_t c = 0; c < 7; ++c) mean += Y(r, c);
        mean /= 7;
        for (std::size_t c = 0; c < 7; ++c) var += (Y(r, c) - mean) * (Y(r, c) - mean);
        CHECK(mean == Approx(0.0).margin(1e-5));
        CHECK(var / 7 == Approx(1.0).epsilon(1e-4));
    }
    // Scale and shift.
    Floats1d G({7}), b({7});
    for (std::size_t i = 0; i < 7; ++i) {
        G[i] = static_cast<float>(i) - 3.0f;
        b[i] = 0.5f * static_cast<float>(i);
    }
    ln.set_param("G", param_view(G));
    ln.set_param("b", param_view(b));
    const Floats2d Ys = ln.predict(X);
    for (std::size_t r = 0; r < 4; ++r)
        for (std::size_t c = 0; c < 7; ++c) CHECK(Ys(r, c) == Approx(Y(r, c) * G[c] + b[c]).margin(1e-5));
    // A constant row does not divide by zero.
    const Floats2d C({1, 7}, {2, 2, 2, 2, 2, 2, 2});
    for (float v : ln.predict(C)) CHECK(std::isfinite(v));
}

TEST_CASE("layers: Dropout", "[layers]") {
    const Floats2d X = random_array(50, 40, 16, 1.0, 2.0);
    auto all = Dropout(1.0);
    for (float v : all.begin_update(X).first) CHECK(v == 0.0f);
    auto none = Dropout(0.0);
    const Floats2d N = none.begin_update(X).first;
    for (std::size_t i = 0; i < X.size(); ++i) CHECK(N[i] == X[i]);

    fix_random_seed(5);
    auto d = Dropout(0.25);
    const Floats2d Y = d.begin_update(X).first;
    std::size_t dropped = 0;
    for (std::size_t i = 0; i < X.size(); ++i) {
        if (Y[i] == 0.0f)
            ++dropped;
        else
            CHECK(Y[i] == Approx(X[i] / 0.75f));
    }
    // 2000 values, rate 0.25: 500 expected, sd ~19.
    CHECK(dropped > 400);
    CHECK(dropped < 600);
}

// The counter-based masks behind Dropout and the plan (random.hpp): a range filled alone is
// the same as in the whole; the kept fraction is 1 - rate; keys and positions decorrelate.
TEST_CASE("layers: dropout_mask is a function of the key and the index", "[layers]") {
    constexpr std::size_t n = 100000;
    std::vector<float> whole(n), parts(n), other(n);
    dropout_mask(12345, 0, whole.data(), n, 0.2, 1.25f);
    for (std::size_t b = 0; b < n; b += 777) dropout_mask(12345, b, parts.data() + b, std::min<std::size_t>(777, n - b), 0.2, 1.25f);
    CHECK(whole == parts);
    dropout_mask(12346, 0, other.data(), n, 0.2, 1.25f);
    std::size_t kept = 0, same = 0, runs = 0, other_values = 0;
    for (std::size_t i = 0; i < n; ++i) {
        other_values += whole[i] != 0.0f && whole[i] != 1.25f;
        kept += whole[i] != 0.0f;
        same += (whole[i] != 0.0f) == (other[i] != 0.0f);
        runs += i > 0 && (whole[i] != 0.0f) != (whole[i - 1] != 0.0f);
    }
    CHECK(other_values == 0);
    // kept ~ Binomial(1e5, 0.8): sd 126. Two keys agree where both keep or both drop:
    // 0.68 of the time (sd 148). Changes between neighbours: 2 * 0.8 * 0.2 = 0.32 (sd 148).
    CHECK(kept > 79400);
    CHECK(kept < 80600);
    CHECK(same > 67300);
    CHECK(same < 68700);
    CHECK(runs > 31300);
    CHECK(runs < 32700);
    // rate 0 keeps all
    dropout_mask(7, 0, other.data(), n, 0.0, 1.0f);
    CHECK(std::count(other.begin(), other.end(), 1.0f) == static_cast<std::ptrdiff_t>(n));
}

TEST_CASE("layers: chain and clone compute the composition", "[layers]") {
    fix_random_seed(6);
    auto a = Relu<5>();
    auto b = Mish<4>();
    auto c = Softmax<3>();
    const Floats2d X = random_array(6, 7, 17);
    a.initialize(X);
    randomize(a, 1);
    b.initialize(a.predict(X));
    randomize(b, 2);
    c.initialize(b.predict(a.predict(X)));
    randomize(c, 3);
    auto model = a >> b >> c;  // copies with the same weights
    const Floats2d P = model.predict(X), R = c.predict(b.predict(a.predict(X)));
    for (std::size_t i = 0; i < P.size(); ++i) CHECK(P[i] == R[i]);

    auto cl = clone(Linear<7>(), 2);
    cl.initialize(X);
    randomize(cl, 4);
    const Floats2d Q = cl.predict(X), S = cl[1].predict(cl[0].predict(X));
    for (std::size_t i = 0; i < Q.size(); ++i) CHECK(Q[i] == S[i]);
    CHECK(model.describe().find("mish") != std::string::npos);
}

TEST_CASE("layers: predict may run on several threads at once", "[layers]") {
    fix_random_seed(7);
    auto model = Relu<32>({.normalize = true}) >> Maxout<16>() >> Softmax<4>();
    const Floats2d X = random_array(64, 20, 18);
    model.initialize(X);
    randomize(model, 5);
    const Floats2d expected = model.predict(X);
    std::vector<std::thread> threads;
    std::vector<int> ok(4, 0);
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&, t] {
            bool same = true;
            for (int k = 0; k < 20; ++k) {
                const Floats2d P = model.predict(X);
                same = same && std::equal(P.begin(), P.end(), expected.begin());
            }
            ok[static_cast<std::size_t>(t)] = same;
        });
    for (auto& th : threads) th.join();
    for (int v : ok) CHECK(v == 1);
}

TEST_CASE("layers: MultiSoftmax gives a distribution per group; bad groups, widths and files are named", "[layers]") {
    const Floats2d X = random_array(4, 5, 61);
    MultiSoftmax<> m({2, 3});
    m.initialize(X);
    CHECK(m.get_dim("nO") == 5);
    for (float w : m.get_param("W")) CHECK(w == 0.0f);  // zeros, as Thinc's
    randomize(m, 62);
    const Floats2d P = m.predict(X);
    REQUIRE(P.shape(1) == 5);
    for (std::size_t r = 0; r < 4; ++r) {
        CHECK(std::abs(P(r, 0) + P(r, 1) - 1.0f) < 1e-6f);
        CHECK(std::abs(P(r, 2) + P(r, 3) + P(r, 4) - 1.0f) < 1e-6f);
    }
    CHECK_THROWS_WITH(MultiSoftmax<>({}), Contains("tenon-E197"));
    CHECK_THROWS_WITH(MultiSoftmax<>({2, 0}), Contains("tenon-E197") && Contains("group 1"));
    MultiSoftmax<> wide({2, 3});
    CHECK_THROWS_WITH(wide.initialize(X, random_array(4, 6, 1)), Contains("multisoftmax"));
    // The groups are the architecture: a file of other groups is another model.
    MultiSoftmax<> same({2, 3}), other({3, 2});
    same.from_bytes(m.to_bytes());
    CHECK(same.predict(X)[7] == P[7]);
    CHECK_THROWS_WITH(other.from_bytes(m.to_bytes()), Contains("tenon-E207") && Contains("nOs"));
    // In a chain (a plan's layer stage): the same as its layers, training too.
    auto a = Relu<6>() >> MultiSoftmax<>({2, 3});
    a.initialize(X);
    randomize(a, 63);
    auto b = a;
    const Floats2d dY = random_array(4, 5, 64);
    auto [Ya, bpa] = a.begin_update(X);
    const Floats2d dXa = bpa(dY);
    REQUIRE(a.uses_plan());
    Floats2d Yb, dXb;
    {
        auto [y, bpb] = unfused(b).begin_update(X);
        dXb = bpb(dY);
        Yb = std::move(y);
    }
    bool same_bits = Ya.size() == Yb.size() && dXa.size() == dXb.size();
    for (std::size_t i = 0; same_bits && i < Ya.size(); ++i) same_bits = Ya[i] == Yb[i];
    for (std::size_t i = 0; same_bits && i < dXa.size(); ++i) same_bits = dXa[i] == dXb[i];
    CHECK(same_bits);
}

namespace {
// ParametricAttention's output with a plain double loop: each row of X times the softmax over
// its sequence of the rows' scores K Q (K = X without a key transform).
Floats2d attention_ref(const Ragged& X, const Floats2d& K, CParamView Q) {
    const std::size_t n = X.data().shape(1);
    Floats2d Y({X.rows(), n});
    std::size_t r0 = 0;
    for (std::size_t s = 0; s < X.size(); ++s) {
        const auto len = static_cast<std::size_t>(X.lengths()[s]);
        std::vector<double> score(len);
        double mx = -1e300, sum = 0;
        for (std::size_t t = 0; t < len; ++t) {
            for (std::size_t j = 0; j < n; ++j) score[t] += double(K(r0 + t, j)) * Q.data[j];
            mx = std::max(mx, score[t]);
        }
        for (double& v : score) sum += (v = std::exp(v - mx));
        for (std::size_t t = 0; t < len; ++t)
            for (std::size_t j = 0; j < n; ++j)
                Y(r0 + t, j) = static_cast<float>(X.data()(r0 + t, j) * score[t] / sum);
        r0 += len;
    }
    return Y;
}
bool close_to(const Floats2d& a, const Floats2d& b, float tol = 1e-5f) {
    if (a.shape() != b.shape()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (std::abs(a[i] - b[i]) > tol * (1.0f + std::abs(b[i]))) return false;
    return true;
}
}  // namespace

TEST_CASE("layers: ParametricAttention weights each sequence's rows by a softmax of their scores", "[layers][attention]") {
    const Ragged X(random_array(10, 5, 71), {3, 1, 0, 4, 2});
    ParametricAttention<> m;
    CHECK(m.name() == "para-attn");
    CHECK(!m.has_dim("nO"));
    m.initialize(X);
    CHECK(m.get_dim("nO") == 5);
    CHECK(m.get_dim("nI") == 5);
    for (float q : m.get_param("Q")) CHECK((q >= -0.1f && q <= 0.1f));  // Thinc's uniform(-0.1, 0.1)
    randomize(m, 72);
    const Ragged Y = m.predict(X);
    CHECK(std::equal(Y.lengths().begin(), Y.lengths().end(), X.lengths().begin()));
    CHECK(close_to(Y.data(), attention_ref(X, X.data(), m.get_param("Q"))));
    // The length-1 sequence's row has weight 1: it passes unchanged.
    for (std::size_t j = 0; j < 5; ++j) CHECK(Y.data()(3, j) == Approx(X.data()(3, j)));
    auto [Yt, bp] = m.begin_update(X);
    CHECK(Yt.data()[7] == Y.data()[7]);
    const Ragged dX = bp(X.with_data(random_array(10, 5, 73)));
    CHECK(dX.data().shape() == X.data().shape());
    CHECK(testing::nonzero(m.get_grad("Q")));

    // Scores beyond Thinc's clip to [-20, 20]: tenon's weights are the scores' softmax (Thinc
    // 8.1's would be those of the clipped scores: here (0.5, 0.5) where the true ones differ).
    ParametricAttention<2> big;
    const Ragged Xb(Floats2d({2, 2}, {30.0f, 0.0f, 25.0f, 0.0f}), {2});
    big.initialize(Xb);
    big.set_param("Q", param_view(Floats1d({2}, {1.0f, 0.0f})));  // scores 30 and 25
    const Ragged Yb = big.predict(Xb);
    const double w0 = 1.0 / (1.0 + std::exp(-5.0));
    CHECK(Yb.data()(0, 0) == Approx(30.0 * w0).epsilon(1e-5));
    CHECK(Yb.data()(1, 0) == Approx(25.0 * (1.0 - w0)).epsilon(1e-4));
}

TEST_CASE("layers: ParametricAttention_v2's key transform is a child: keys, files, copies, training", "[layers][attention]") {
    const Ragged X(random_array(9, 4, 74), {2, 0, 5, 1, 1});
    auto m = ParametricAttention_v2(Relu<4>());
    static_assert(std::is_same_v<decltype(m), ParametricAttentionV2<4, Relu<4>>>);
    CHECK(m.get_dim("nO") == 4);  // from the key transform's static width
    m.initialize(X);
    CHECK(m.key_transform().get_dim("nI") == 4);
    REQUIRE(m.walk().size() == 2);
    CHECK(m.walk()[1] == &m.key_transform());
    randomize(m, 75);
    const Floats2d K = m.key_transform().predict(X.data());
    CHECK(close_to(m.predict(X).data(), attention_ref(X, K, m.get_param("Q"))));
    // The gradients reach the key transform; finish_update trains both.
    auto [Y, bp] = m.begin_update(X);
    bp(X.with_data(random_array(9, 4, 76)));
    CHECK(testing::nonzero(m.key_transform().get_grad("W")));
    CHECK(m.get_gradients().size() == 3);  // Q, W, b
    const auto before = testing::all_params(m);
    Optimizer opt = Adam(0.01);
    m.finish_update(opt);
    CHECK(testing::all_params(m) != before);
    // A file holds Q and the key transform's weights; a copy is a model of its own.
    auto loaded = ParametricAttention_v2(Relu<4>());
    loaded.from_bytes(m.to_bytes());
    CHECK(testing::all_params(loaded) == testing::all_params(m));
    CHECK(loaded.predict(X).data()[5] == m.predict(X).data()[5]);
    auto copy = m;
    copy.key_transform().get_param("W").data[0] += 1.0f;
    CHECK(copy.key_transform().get_param("W").data[0] != m.key_transform().get_param("W").data[0]);
    // A key transform of dyn widths gets nO = the input's width; a type-erased one works too.
    auto dynkey = ParametricAttention_v2(AnyModel<Floats2d, Floats2d>(Linear<>()));
    dynkey.initialize(X);
    CHECK(dynkey.key_transform().get_dim("nO") == 4);
    CHECK(dynkey.predict(X).data().shape(1) == 4);
    // Without a key transform, v2 is v1.
    static_assert(std::is_same_v<decltype(ParametricAttention_v2<4>()), ParametricAttention<4>>);
}

TEST_CASE("layers: ParametricAttention's edge cases and errors", "[layers][attention]") {
    ParametricAttention<3> m;
    const Ragged X(random_array(5, 3, 77), {2, 3});
    m.initialize(X);
    SECTION("an empty batch, and sequences of no rows") {
        for (const Ragged& E : {Ragged(Floats2d({0, 3}), Ints1d({0})), Ragged(Floats2d({0, 3}), {0, 0, 0})}) {
            const Ragged Y = m.predict(E);
            CHECK(Y.rows() == 0);
            CHECK(Y.size() == E.size());
            auto [Yt, bp] = m.begin_update(E);
            const Ragged dX = bp(Yt);
            CHECK(dX.rows() == 0);
            CHECK(dX.size() == E.size());
            CHECK(!testing::nonzero(m.get_grad("Q")));
        }
        auto v2 = ParametricAttention_v2(Linear<3, 3>());
        v2.initialize(X);
        const Ragged E(Floats2d({0, 3}), {0, 0});
        auto [Yt, bp] = v2.begin_update(E);
        CHECK(bp(Yt).rows() == 0);
    }
    SECTION("wrong widths at run time: the input, a zero width, the sample") {
        CHECK_THROWS_WITH(m.predict(Ragged(random_array(5, 4, 1), {5})),
                          Contains("tenon-E101") && Contains("para-attn") && Contains("3") && Contains("4"));
        CHECK_THROWS_WITH(m.begin_update(Ragged(Floats2d({2, 0}), {2})), Contains("tenon-E260"));
        ParametricAttention<3> fresh;
        CHECK_THROWS_WITH(fresh.initialize(Ragged(random_array(2, 4, 1), {2})), Contains("tenon-E101"));
        ParametricAttention<> unknown;
        CHECK_THROWS_WITH(unknown.initialize(), Contains("tenon-E105"));
    }
    SECTION("a gradient not shaped like the output: tenon-E273") {
        auto [Y, bp] = m.begin_update(X);
        CHECK_THROWS_WITH(bp(Ragged(random_array(5, 3, 2), {3, 2})),
                          Contains("tenon-E273") && Contains("para-attn") && Contains("[2, 3]") && Contains("[3, 2]"));
        CHECK_THROWS_WITH(bp(Ragged(random_array(5, 2, 2), {2, 3})), Contains("tenon-E273") && Contains("width 2"));
        CHECK_THROWS_WITH(bp(Ragged(random_array(5, 3, 2), {5})), Contains("tenon-E273"));
    }
    SECTION("a key transform of other widths: tenon-E272") {
        // Known when the model is made (the key transform's options) ...
        CHECK_THROWS_WITH(ParametricAttention_v2<3>(Linear<>({.nO = 4})),
                          Contains("tenon-E272") && Contains("linear") && Contains("nO is 4"));
        // ... at initialize (a sample wider than the key transform) ...
        auto k = ParametricAttention_v2(AnyModel<Floats2d, Floats2d>(Linear<>({.nI = 4})));
        CHECK_THROWS_WITH(k.initialize(X), Contains("tenon-E272") && Contains("nI is 4"));
        // ... or at a call (a key transform changed after initialize).
        auto c = ParametricAttention_v2(Linear<>());
        c.initialize(X);
        c.key_transform().set_dim("nO", 2, true);
        c.key_transform().initialize();
        CHECK_THROWS_WITH(c.predict(X), Contains("tenon-E272") && Contains("expected (5, 3) but found (5, 2)"));
    }
}

TEST_CASE("layers: a classifier with ParametricAttention trains; the plan leaves it to its layers", "[layers][attention]") {
    // Each document's class is the sign pattern of its mean row's first two columns.
    Rng rng(78);
    std::vector<Floats2d> docs;
    Ints1d labels({24});
    for (std::size_t d = 0; d < 24; ++d) {
        const std::size_t len = 1 + d % 5;
        Floats2d doc({len, 6});
        for (float& v : doc) v = static_cast<float>(rng.uniform(-1.0, 1.0));
        const int c = d % 3;
        for (std::size_t t = 0; t < len; ++t) doc(t, static_cast<std::size_t>(c)) += 1.5f;
        labels[d] = c;
        docs.push_back(std::move(doc));
    }
    const List<Floats2d> X(std::move(docs));
    auto model = list2ragged() >> with_array<Ragged>(Relu<8>()) >> ParametricAttention<8>() >> reduce_sum() >>
                 Softmax<3>();
    using M = decltype(model);
    // The plan takes it (an "attention" stage over the sequences' rows): the model's own calls
    // run the plan (tests/unit/test_seq_plan.cpp compares it with the layers).
    static_assert(lowering::engine_types<M>);
    fix_random_seed(79);
    model.initialize(X);
    const CategoricalCrossentropy loss;
    Optimizer opt = Adam(0.01);
    double first = 0, last = 0;
    for (int step = 0; step < 60; ++step) {
        auto [P, bp] = model.begin_update(X);
        const double l = loss.get_loss(P, labels);
        (step == 0 ? first : last) = l;
        bp(loss.get_grad(P, labels));
        model.finish_update(opt);
    }
    CHECK(model.uses_plan());
    CHECK(last < 0.5 * first);
    // The same with v2 and a key transform.
    auto model2 = list2ragged() >> with_array<Ragged>(Relu<8>()) >> ParametricAttention_v2(Relu<8>()) >>
                  reduce_sum() >> Softmax<3>();
    model2.initialize(X);
    first = last = 0;
    for (int step = 0; step < 60; ++step) {
        auto [P, bp] = model2.begin_update(X);
        const double l = loss.get_loss(P, labels);
        (step == 0 ? first : last) = l;
        bp(loss.get_grad(P, labels));
        model2.finish_update(opt);
    }
    CHECK(last < 0.5 * first);
    // Its layers alone, the same values (to rounding: the plan's products run over other row blocks).
    const Floats2d P1 = model.predict(X);
    const Floats2d P2 = unfused(model).predict(X);
    REQUIRE(P2.size() == P1.size());
    for (std::size_t i = 0; i < P1.size(); ++i) CHECK(std::abs(P1.data()[i] - P2.data()[i]) <= 1e-5f);
}
