// Finite-difference gradient checks for every layer, after dlib's test_layer: central
// differences for the input gradient and for every parameter gradient; backprop must *add*
// into the gradients (pre-filled values are kept, a second call doubles them, and gradients
// pre-filled with +inf stay +inf everywhere, so no entry is skipped or overwritten); dX must
// be finite. One generic checker (check_gradients) runs over a table of layers.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "tenon/tenon.hpp"
#include "support/host_floats.hpp"
#include "unit/helpers.hpp"

using namespace tenon;

namespace {

constexpr std::uint64_t kMaskSeed = 0xD50;  // reseeded before every forward: dropout masks stay fixed

using testing::random_array;

// A scalar function of the model's output and its gradient (what backprop receives).
struct Objective {
    std::function<double(const Floats2d&)> value;
    std::function<Floats2d(const Floats2d&)> grad;
};
// Builds the objective once the output shape is known.
using ObjectiveFor = std::function<Objective(const Floats2d& Y)>;

// L = sum(G * Y) with a fixed random G, so dL/dY = G.
Objective linear_objective(const Floats2d& Y) {
    Floats2d G = random_array(Y.shape(0), Y.shape(1), 777);
    return {[G](const Floats2d& y) {
                double s = 0;
                for (std::size_t i = 0; i < y.size(); ++i) s += double(G[i]) * double(y[i]);
                return s;
            },
            [G](const Floats2d&) { return G; }};
}

// L = sum(G * P) for P = softmax(z): dL/dz = P * (G - sum(P * G)) row by row. Softmax's backprop
// expects the logits' gradient, so this is what it gets.
Objective softmax_jacobian_objective(const Floats2d& Y) {
    Objective lin = linear_objective(Y);
    Floats2d G = lin.grad(Y);
    lin.grad = [G](const Floats2d& P) {
        Floats2d d(P.shape(), uninitialized);
        for (std::size_t r = 0; r < P.shape(0); ++r) {
            double pg = 0;
            for (std::size_t c = 0; c < P.shape(1); ++c) pg += double(P(r, c)) * G(r, c);
            for (std::size_t c = 0; c < P.shape(1); ++c)
                d(r, c) = static_cast<float>(double(P(r, c)) * (double(G(r, c)) - pg));
        }
        return d;
    };
    return lin;
}

// The same for MultiSoftmax: a softmax over each group of columns, so each group's Jacobian.
ObjectiveFor group_softmax_jacobian_objective(std::vector<std::size_t> groups) {
    return [groups](const Floats2d& Y) {
        Objective lin = linear_objective(Y);
        Floats2d G = lin.grad(Y);
        lin.grad = [G, groups](const Floats2d& P) {
            Floats2d d(P.shape(), uninitialized);
            for (std::size_t r = 0; r < P.shape(0); ++r) {
                std::size_t c0 = 0;
                for (std::size_t n : groups) {
                    double pg = 0;
                    for (std::size_t c = c0; c < c0 + n; ++c) pg += double(P(r, c)) * G(r, c);
                    for (std::size_t c = c0; c < c0 + n; ++c)
                        d(r, c) = static_cast<float>(double(P(r, c)) * (double(G(r, c)) - pg));
                    c0 += n;
                }
            }
            return d;
        };
        return lin;
    };
}

// The cross-entropy of P against integer labels; its get_grad is the logits' gradient.
Objective crossentropy_objective(const Floats2d& Y) {
    Ints1d labels({Y.shape(0)});
    for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<std::int32_t>((i * 7 + 1) % Y.shape(1));
    CategoricalCrossentropy loss;
    return {[labels, loss](const Floats2d& P) { return loss.get_loss(P, labels); },
            [labels, loss](const Floats2d& P) { return loss.get_grad(P, labels); }};
}

struct CheckOptions {
    double eps = 1e-3;   // central-difference step
    double rtol = 1e-2;  // relative tolerance
    double atol = 2e-3;  // absolute floor (float32 rounding of L divided by 2 eps)
    // The objective used for the finite differences: by default the training forward with a
    // fixed dropout mask; Softmax's logits check uses predict with normalize_outputs = false.
    bool use_predict = false;
};

bool close(double a, double b, double rtol, double atol) {
    return std::abs(a - b) <= atol + rtol * std::max(std::abs(a), std::abs(b));
}

struct ParamRef {
    Node* node;
    std::string name;
    std::string label() const { return node->name() + "#" + std::to_string(node->id()) + "." + name; }
};

template <class M>
std::vector<ParamRef> all_params(M& model) {
    std::vector<ParamRef> out;
    for (Node* n : model.walk())
        for (const auto& p : n->param_names())
            if (n->has_param(p)) out.push_back({n, p});
    return out;
}

template <class M>
void fill_grads(M& model, float value) {
    for (auto& p : all_params(model))
        for (float& g : p.node->get_grad(p.name)) g = value;
}

// What the checker found. ok() when backprop is right.
struct GradReport {
    std::size_t entries = 0, kinks = 0, mismatches = 0;
    double worst = 0;            // the largest |error| / tolerance among the entries that passed
    bool finite = true;          // dX and the gradients have no NaN / inf
    bool adds_twice = true;      // a second backprop call doubles the gradients
    bool adds_to_prefill = true; // gradients pre-filled with V end at V + grad
    bool inf_kept = true;        // gradients pre-filled with +inf stay +inf everywhere
    std::string text;
    // Kinks of piecewise-linear functions (relu, maxout) are rare; many would hide errors.
    bool few_kinks() const { return kinks <= std::max<std::size_t>(1, entries / 50); }
    bool ok() const { return mismatches == 0 && few_kinks() && finite && adds_twice && adds_to_prefill && inf_kept; }
};

// The checker: FD vs backprop for dX and every parameter; accumulation; +inf pre-fill. It
// reports instead of asserting, so that it can be tested on broken layers too.
template <class M>
GradReport gradcheck(M& model, const Floats2d& X, const ObjectiveFor& objective_for = linear_objective,
                     CheckOptions opt = {}) {
    GradReport rep;
    std::ostringstream text;
    auto forward = [&](Floats2dCView x) -> Floats2d {
        if (opt.use_predict) return model.predict(x);
        fix_random_seed(kMaskSeed);
        return model(x, true).first;
    };
    const Floats2d Y0 = forward(X);
    const Objective obj = objective_for(Y0);
    Floats2d Xp(X);
    auto L = [&] { return obj.value(forward(Xp)); };

    // The analytic gradients, with every gradient zeroed first.
    auto params = all_params(model);
    fill_grads(model, 0.0f);
    fix_random_seed(kMaskSeed);
    auto [Y, backprop] = model.begin_update(X);
    REQUIRE(Y.shape() == Y0.shape());
    const Floats2d dY = obj.grad(Y);
    const Floats2d dX = backprop(dY);
    REQUIRE(dX.shape() == X.shape());
    auto finite = [](auto&& range) {
        return std::all_of(range.begin(), range.end(), [](float v) { return std::isfinite(v); });
    };
    if (!finite(dX)) {
        rep.finite = false;
        text << "dX has NaN or inf\n";
    }
    std::vector<std::vector<float>> g0;
    for (auto& p : params) {
        auto g = p.node->get_grad(p.name);
        g0.emplace_back(g.begin(), g.end());
        if (!finite(g0.back())) {
            rep.finite = false;
            text << "d" << p.label() << " has NaN or inf\n";
        }
    }

    // Central differences; where FD disagrees with backprop, a second FD with a smaller step
    // tells a kink of a piecewise-linear function (the two FDs differ) from a wrong gradient
    // (the two FDs agree with each other, not with backprop).
    auto check_entry = [&](float* x, double analytic, const std::string& what, std::size_t i) {
        ++rep.entries;
        const float saved = *x;
        auto fd_at = [&](double h) {
            *x = static_cast<float>(saved + h);
            const double hp = double(*x) - saved;  // the step actually taken in float
            const double lp = L();
            *x = static_cast<float>(saved - h);
            const double hm = saved - double(*x);
            const double lm = L();
            *x = saved;
            return (lp - lm) / (hp + hm);
        };
        const double fd = fd_at(opt.eps);
        const double ratio =
            std::abs(analytic - fd) / (opt.atol + opt.rtol * std::max(std::abs(analytic), std::abs(fd)));
        if (close(analytic, fd, opt.rtol, opt.atol)) {
            rep.worst = std::max(rep.worst, ratio);
            return;
        }
        const double fd_small = fd_at(opt.eps / 4);
        if (!close(fd, fd_small, opt.rtol, opt.atol)) {
            ++rep.kinks;
            return;
        }
        if (rep.mismatches++ < 8)
            text << what << "[" << i << "]: backprop " << analytic << " vs finite difference " << fd << "\n";
    };
    for (std::size_t i = 0; i < Xp.size(); ++i) check_entry(&Xp[i], dX[i], "dX", i);
    for (std::size_t k = 0; k < params.size(); ++k) {
        ParamView w = params[k].node->get_param(params[k].name);
        std::string what = "d";  // (not "d" + label(): g++ 12 warns falsely, -Wrestrict)
        what += params[k].label();
        for (std::size_t i = 0; i < w.size(); ++i) check_entry(w.data + i, g0[k][i], what, i);
    }

    // (b1) Calling backprop again adds the same gradients once more and returns the same dX.
    const Floats2d dX_again = backprop(dY);
    for (std::size_t i = 0; i < dX.size(); ++i)
        if (!close(dX_again[i], dX[i], 1e-6, 1e-6)) rep.adds_twice = false;
    for (std::size_t k = 0; k < params.size(); ++k) {
        auto g = params[k].node->get_grad(params[k].name);
        for (std::size_t i = 0; i < g.size(); ++i)
            if (!close(g.data[i], 2.0 * g0[k][i], 1e-5, 1e-6)) {
                if (rep.adds_twice) text << params[k].label() << "[" << i << "]: " << g.data[i]
                                         << " after two backprops, expected " << 2.0 * g0[k][i] << "\n";
                rep.adds_twice = false;
            }
    }

    // (b2) Gradients pre-filled with V end at V + grad.
    std::vector<std::vector<float>> V;
    for (std::size_t k = 0; k < params.size(); ++k) {
        auto g = params[k].node->get_grad(params[k].name);
        Rng rng(100 + k);
        V.emplace_back();
        for (float& v : g) V.back().push_back(v = static_cast<float>(rng.uniform(-3, 3)));
    }
    {
        fix_random_seed(kMaskSeed);
        auto [Y2, bp2] = model.begin_update(X);
        bp2(obj.grad(Y2));
        for (std::size_t k = 0; k < params.size(); ++k) {
            auto g = params[k].node->get_grad(params[k].name);
            for (std::size_t i = 0; i < g.size(); ++i)
                if (!close(g.data[i], double(V[k][i]) + g0[k][i], 1e-5, 1e-5)) {
                    if (rep.adds_to_prefill) text << params[k].label() << "[" << i << "]: pre-filled with "
                                                  << V[k][i] << ", found " << g.data[i] << ", expected "
                                                  << double(V[k][i]) + g0[k][i] << "\n";
                    rep.adds_to_prefill = false;
                }
        }
    }

    // (c) Gradients pre-filled with +inf stay +inf everywhere: every entry was added to
    // (an overwrite leaves a finite value, a multiply by 0 a NaN); dX stays finite.
    fill_grads(model, std::numeric_limits<float>::infinity());
    {
        fix_random_seed(kMaskSeed);
        auto [Y3, bp3] = model.begin_update(X);
        const Floats2d dX3 = bp3(obj.grad(Y3));
        if (!finite(dX3)) {
            rep.finite = false;
            text << "dX has NaN or inf when the gradients are +inf\n";
        }
        for (auto& p : params) {
            auto g = p.node->get_grad(p.name);
            for (std::size_t i = 0; i < g.size(); ++i)
                if (!(std::isinf(g.data[i]) && g.data[i] > 0)) {
                    if (rep.inf_kept) text << p.label() << "[" << i << "]: pre-filled with +inf, found "
                                           << g.data[i] << "\n";
                    rep.inf_kept = false;
                }
        }
    }
    fill_grads(model, 0.0f);
    text << "entries checked: " << rep.entries << ", kinks skipped: " << rep.kinks
         << ", worst error / tolerance: " << rep.worst << "\n";
    rep.text = text.str();
    return rep;
}

template <class M>
void check_gradients(M& model, const Floats2d& X, const ObjectiveFor& objective_for = linear_objective,
                     CheckOptions opt = {}) {
    const GradReport r = gradcheck(model, X, objective_for, opt);
    if (std::getenv("TENON_GRADCHECK_VERBOSE")) WARN(model.name() << ": " << r.text);
    INFO(r.text);
    CHECK(r.entries > 0);
    CHECK(r.mismatches == 0);
    CHECK(r.few_kinks());
    CHECK(r.finite);
    CHECK(r.adds_twice);
    CHECK(r.adds_to_prefill);
    CHECK(r.inf_kept);
}

// Random weights everywhere (several layers start with zeros, which would hide errors).
template <class M>
void randomize(M& model, std::uint64_t seed) {
    for (auto& p : all_params(model)) {
        Rng rng(seed++);
        for (float& v : p.node->get_param(p.name)) v = static_cast<float>(rng.uniform(-1.0, 1.0));
    }
}

// Initialises on X, randomises the weights and runs the checker.
template <class M>
void run_check(M model, const Floats2d& X, const ObjectiveFor& objective = linear_objective, CheckOptions opt = {}) {
    model.initialize(X);
    randomize(model, 31);
    check_gradients(model, X, objective, opt);
}

// A Ragged -> Ragged model (ParametricAttention) run on the rows of a Floats2d cut into fixed
// sequences, so that the checker (which takes Floats2d models) sees its dX and parameters.
template <class M>
class OnLengths : public Layer<OnLengths<M>, Floats2d, Floats2d> {
    using Base = Layer<OnLengths<M>, Floats2d, Floats2d>;
    friend Base;

public:
    OnLengths(M model, std::initializer_list<std::int32_t> lengths)
        : Base("on_lengths", {}, {}), model_(std::move(model)), lengths_({lengths.size()}, lengths) {}
    M& model() noexcept { return model_; }
    void for_each_child(const std::function<void(Node&)>& f) override { f(model_); }
    struct Backprop {
        typename M::Backprop bp;
        Ints1d lengths;
        Floats2d operator()(Floats2dCView dY) const { return bp(Ragged(Floats2d(dY), lengths)).data(); }
    };

private:
    Ragged ragged(Floats2dCView X) const { return Ragged(Floats2d(X), lengths_); }
    void init_impl(const Floats2dCView* X, const Floats2dCView*) {
        if (X) model_.initialize(ragged(*X));
        else model_.initialize();
        this->mark_initialized();
    }
    Floats2d predict_impl(Floats2dCView X) const { return model_.predict(ragged(X)).data(); }
    std::pair<Floats2d, Backprop> forward_impl(Floats2dCView X, bool is_train) {
        auto [Y, bp] = model_(ragged(X), is_train);
        return {std::move(Y).data(), Backprop{std::move(bp), lengths_}};
    }

    M model_;
    Ints1d lengths_;
};

struct Case {
    const char* name;
    std::function<void()> run;
};

const std::vector<Case>& cases() {
    static const std::vector<Case> table = {
        {"Linear", [] { run_check(Linear<3>(), random_array(4, 5, 1)); }},
        {"Relu", [] { run_check(Relu<4>(), random_array(4, 5, 2)); }},
        {"Relu normalize", [] { run_check(Relu<4>({.normalize = true}), random_array(4, 5, 3)); }},
        {"Relu normalize + dropout (fixed mask)",
         [] { run_check(Relu<6>({.dropout = 0.5, .normalize = true}), random_array(4, 5, 4)); }},
        {"Sigmoid", [] { run_check(Sigmoid<3>(), random_array(4, 5, 5)); }},
        {"sigmoid_activation", [] { run_check(sigmoid_activation(), random_array(4, 5, 6, -4.0, 4.0)); }},
        {"Softmax logits (normalize_outputs = false)",
         [] {
             run_check(Softmax<3>({.normalize_outputs = false}), random_array(4, 5, 7), linear_objective,
                       {.use_predict = true});
         }},
        {"Softmax with its Jacobian", [] { run_check(Softmax<3>(), random_array(4, 5, 8), softmax_jacobian_objective); }},
        {"Softmax temperature 2 with its Jacobian",
         [] { run_check(Softmax<3>({.temperature = 2.0}), random_array(4, 5, 9), softmax_jacobian_objective); }},
        {"MultiSoftmax (2 and 3 columns) with each group's Jacobian",
         [] { run_check(MultiSoftmax<>({2, 3}), random_array(4, 5, 11), group_softmax_jacobian_objective({2, 3})); }},
        {"Softmax + CategoricalCrossentropy",
         [] { run_check(Softmax<4>(), random_array(5, 5, 10), crossentropy_objective); }},
        {"Mish", [] { run_check(Mish<4>(), random_array(4, 5, 11, -2.0, 2.0)); }},
        {"Mish normalize", [] { run_check(Mish<4>({.normalize = true}), random_array(4, 5, 12)); }},
        {"Gelu", [] { run_check(Gelu<4>(), random_array(4, 5, 31, -3.0, 3.0)); }},
        {"Gelu normalize", [] { run_check(Gelu<4>({.normalize = true}), random_array(4, 5, 32)); }},
        {"Swish", [] { run_check(Swish<4>(), random_array(4, 5, 33, -3.0, 3.0)); }},
        {"Swish normalize + dropout (fixed mask)",
         [] { run_check(Swish<4>({.dropout = 0.3, .normalize = true}), random_array(4, 5, 34)); }},
        // pre-activations past both bends at +-2.5 (a kink there is told apart and skipped)
        {"HardSwish", [] { run_check(HardSwish<4>(), random_array(4, 5, 35, -3.0, 3.0)); }},
        {"HardSwish normalize", [] { run_check(HardSwish<4>({.normalize = true}), random_array(4, 5, 36, -2.0, 2.0)); }},
        {"Maxout nP=3", [] { run_check(Maxout<4>(), random_array(4, 5, 13)); }},
        {"Maxout nP=2", [] { run_check(Maxout<4, dyn, 2>(), random_array(4, 5, 14)); }},
        {"Maxout normalize", [] { run_check(Maxout<4>({.normalize = true}), random_array(4, 5, 15)); }},
        {"LayerNorm", [] { run_check(LayerNorm<>(), random_array(4, 5, 16)); }},
        {"Dropout rate 0", [] { run_check(Dropout(0.0), random_array(4, 5, 17)); }},
        {"Dropout rate 0.5 (fixed mask)", [] { run_check(Dropout(0.5), random_array(6, 5, 18)); }},
        {"noop", [] { run_check(noop(), random_array(3, 4, 19)); }},
        {"chain of several",
         [] {
             run_check(Relu<6>({.normalize = true}) >> Maxout<5>() >> Mish<4>({.dropout = 0.2}) >> Sigmoid<4>() >>
                           LayerNorm<>() >> sigmoid_activation() >> Dropout(0.3) >> Linear<3>(),
                       random_array(4, 5, 20));
         }},
        {"chain of Gelu, Swish and HardSwish",
         [] {
             run_check(Gelu<6>() >> Swish<5>({.normalize = true}) >> HardSwish<4>({.dropout = 0.2}) >> Linear<3>(),
                       random_array(4, 5, 37, -2.0, 2.0));
         }},
        {"chain ending in Softmax + CategoricalCrossentropy",
         [] { run_check(Relu<6>() >> Linear<5>() >> Softmax<3>(), random_array(5, 4, 21), crossentropy_objective); }},
        {"clone", [] { run_check(clone(Mish<5>({.normalize = true}), 3), random_array(4, 5, 22)); }},
        {"clone of a chain", [] { run_check(clone(Relu<4>() >> Linear<4>(), 2), random_array(3, 4, 23)); }},
        // ParametricAttention over sequences of lengths 3, 1, 0, 4, 2 (a row alone in its
        // sequence has weight 1 and no gradient through its score; an empty one is nothing).
        {"ParametricAttention",
         [] { run_check(OnLengths(ParametricAttention<5>(), {3, 1, 0, 4, 2}), random_array(10, 5, 24)); }},
        {"ParametricAttention_v2 with a Linear key transform",
         [] {
             run_check(OnLengths(ParametricAttention_v2(Linear<5, 5>()), {3, 1, 0, 4, 2}), random_array(10, 5, 25));
         }},
        {"ParametricAttention_v2 with a Relu key transform (Q, W, b, dX)",
         [] { run_check(OnLengths(ParametricAttention_v2(Relu<4>()), {2, 5, 1}), random_array(8, 4, 26)); }},
        {"ParametricAttention_v2 without a key transform",
         [] { run_check(OnLengths(ParametricAttention_v2<3>(), {4, 2}), random_array(6, 3, 27)); }},
        // Scores far beyond Thinc's clip to [-20, 20]: tenon's weights are the softmax of the
        // scores themselves, whose gradient the backprop is.
        {"ParametricAttention with scores beyond +-20",
         [] {
             auto m = OnLengths(ParametricAttention<4>(), {3, 2, 1});
             const Floats2d X = random_array(6, 4, 28, -4.0, 4.0);
             m.initialize(X);
             const float Q[4] = {3.0f, -2.5f, 2.0f, 3.5f};
             m.model().set_param("Q", param_view(Floats1d({4}, {Q[0], Q[1], Q[2], Q[3]})));
             check_gradients(m, X);
         }},
    };
    return table;
}

}  // namespace

TEST_CASE("gradcheck: every layer", "[gradcheck]") {
    for (const auto& c : cases()) {
        DYNAMIC_SECTION(c.name) { c.run(); }
    }
}

// Dropout's backprop applies exactly the mask of its forward pass.
TEST_CASE("gradcheck: dropout backprop uses the forward mask", "[gradcheck]") {
    const Floats2d X = random_array(30, 20, 40, 0.5, 1.5);  // no zeros
    const Floats2d G = random_array(30, 20, 41);
    auto d = Dropout(0.5);
    fix_random_seed(9);
    auto [Y, bp] = d.begin_update(X);
    const Floats2d dX = bp(G);
    std::size_t dropped = 0;
    for (std::size_t i = 0; i < X.size(); ++i) {
        if (Y[i] == 0.0f) {
            ++dropped;
            CHECK(dX[i] == 0.0f);
        } else {
            CHECK(Y[i] == 2.0f * X[i]);
            CHECK(dX[i] == 2.0f * G[i]);
        }
    }
    CHECK(dropped > X.size() / 4);
    CHECK(dropped < 3 * X.size() / 4);
    // A second forward draws a new mask; the first backprop keeps its own.
    auto [Y2, bp2] = d.begin_update(X);
    bool differs = false;
    for (std::size_t i = 0; i < X.size(); ++i) differs |= (Y2[i] == 0.0f) != (Y[i] == 0.0f);
    CHECK(differs);
    const Floats2d dX_again = bp(G);
    for (std::size_t i = 0; i < X.size(); ++i) CHECK(dX_again[i] == dX[i]);

    // Inside a layer, the dropped outputs get no gradient: the relu's W gradient is the
    // one computed with the masked dY.
    fix_random_seed(10);
    auto relu = Relu<20>({.dropout = 0.5});
    relu.initialize(X);
    randomize(relu, 5);
    fix_random_seed(11);
    auto [Yr, bpr] = relu.begin_update(X);
    Floats2d masked(G);
    const Floats2d P = relu.predict(X);
    for (std::size_t i = 0; i < masked.size(); ++i) masked[i] = Yr[i] == 0.0f ? 0.0f : 2.0f * G[i];
    bpr(G);
    const std::vector<float> gW(relu.get_grad("W").begin(), relu.get_grad("W").end());
    fill_grads(relu, 0.0f);
    auto plain = Relu<20>();
    plain.initialize(X);
    plain.set_param("W", relu.get_param("W"));
    plain.set_param("b", relu.get_param("b"));
    auto [Yp, bpp] = plain.begin_update(X);
    for (std::size_t i = 0; i < P.size(); ++i) REQUIRE(Yp[i] == P[i]);
    bpp(masked);
    const auto gp = plain.get_grad("W");
    for (std::size_t i = 0; i < gW.size(); ++i) CHECK(gW[i] == Approx(gp.data[i]).margin(1e-5));
}

// The checker itself must catch the errors it is there for.
namespace {
// A linear layer whose backprop is wrong in a configurable way.
enum class Bug { none, scaled_dX, overwrites_grad, skips_bias, nan_dX };
template <Bug B>
class Faulty : public Layer<Faulty<B>, Floats2d, Floats2d> {
    using Base = Layer<Faulty<B>, Floats2d, Floats2d>;
    friend Base;

public:
    Faulty() : Base("faulty", {{"nO", 2}, {"nI", 3}}, {"W", "b"}) {}
    struct Backprop {
        Faulty* layer = nullptr;
        Floats2d X;
        // (on the host, its values copied there and back: support/host_floats.hpp)
        Floats2d operator()(Floats2dCView dY_) const {
            const std::size_t rows = X.shape(0);
            float* dW_ = layer->param(0).grad.data();
            float* db_ = layer->param(1).grad.data();
            std::vector<float> dW = testing::host_floats(dW_, 6), db = testing::host_floats(db_, 2);
            const std::vector<float> W = testing::host_floats(layer->param(0).value.data(), 6);
            const std::vector<float> x = testing::host_floats(X.data(), rows * 3);
            const std::vector<float> dY = testing::host_floats(dY_.data(), rows * 2);
            std::vector<float> dx(rows * 3, 0.0f);
            for (std::size_t r = 0; r < rows; ++r)
                for (std::size_t o = 0; o < 2; ++o) {
                    const float d = dY[r * 2 + o];
                    if (B != Bug::skips_bias) db[o] += d;
                    for (std::size_t i = 0; i < 3; ++i) {
                        if (B == Bug::overwrites_grad && r == 0)
                            dW[o * 3 + i] = d * x[r * 3 + i];
                        else
                            dW[o * 3 + i] += d * x[r * 3 + i];
                        dx[r * 3 + i] += d * W[o * 3 + i] * (B == Bug::scaled_dX ? 1.1f : 1.0f);
                    }
                }
            if (B == Bug::nan_dX) dx[0] = std::nanf("");
            testing::store_floats(dW_, dW);
            testing::store_floats(db_, db);
            Floats2d dX({rows, 3}, uninitialized);
            testing::store_floats(dX.data(), dx);
            return dX;
        }
    };

private:
    void init_impl(const Floats2dCView*, const Floats2dCView*) {
        this->allocate_param(0, {2, 3});
        this->allocate_param(1, {2});
        this->mark_initialized();
    }
    Floats2d predict_impl(Floats2dCView X_) const {
        const std::size_t rows = X_.shape(0);
        const std::vector<float> W = testing::host_floats(this->param(0).value.data(), 6);
        const std::vector<float> b = testing::host_floats(this->param(1).value.data(), 2);
        const std::vector<float> x = testing::host_floats(X_.data(), rows * 3);
        std::vector<float> y(rows * 2);
        for (std::size_t r = 0; r < rows; ++r)
            for (std::size_t o = 0; o < 2; ++o) {
                float s = b[o];
                for (std::size_t i = 0; i < 3; ++i) s += W[o * 3 + i] * x[r * 3 + i];
                y[r * 2 + o] = s;
            }
        Floats2d Y({rows, 2}, uninitialized);
        testing::store_floats(Y.data(), y);
        return Y;
    }
    std::pair<Floats2d, Backprop> forward_impl(Floats2dCView X, bool) {
        return {predict_impl(X), Backprop{this, Floats2d(X)}};
    }
};

template <Bug B>
GradReport check_faulty() {
    Faulty<B> m;
    m.initialize();
    randomize(m, 3);
    return gradcheck(m, random_array(4, 3, 1));
}
}  // namespace

TEST_CASE("gradcheck: the checker catches broken backprops", "[gradcheck]") {
    const GradReport ok = check_faulty<Bug::none>();
    INFO(ok.text);
    CHECK(ok.ok());
    const GradReport scaled = check_faulty<Bug::scaled_dX>();  // wrong dX: the finite differences
    CHECK(scaled.mismatches > 0);
    CHECK_FALSE(scaled.ok());
    const GradReport skips = check_faulty<Bug::skips_bias>();  // a gradient never written
    CHECK(skips.mismatches > 0);
    CHECK_FALSE(skips.ok());
    // Overwriting instead of adding is right from zero (the finite differences agree) but
    // loses what was there: the pre-filled checks catch it.
    const GradReport overwrites = check_faulty<Bug::overwrites_grad>();
    CHECK(overwrites.mismatches == 0);
    CHECK_FALSE(overwrites.adds_twice);
    CHECK_FALSE(overwrites.adds_to_prefill);
    CHECK_FALSE(overwrites.inf_kept);
    const GradReport nan = check_faulty<Bug::nan_dX>();
    CHECK_FALSE(nan.finite);
    CHECK_FALSE(nan.ok());
}
