// The non-finite policy (docs/reliability.md, "Non-finite numbers"): a step with a NaN or inf
// gradient is refused (tenon-E250) with every parameter, moment and gradient as it was, or
// skipped and counted; hyperparameters out of range are refused when the optimizer is made
// (tenon-E251); a NaN or inf in a model's input is refused at predict / begin_update
// (tenon-E252) unless the check is off.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "helpers.hpp"
#include "tenon/tenon.hpp"

using namespace tenon;
using Catch::Matchers::Contains;

namespace {
constexpr float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

auto make_model() {
    auto m = Relu<8, 4>() >> Softmax<3>();
    m.initialize();
    return m;
}

Floats2d onehot(std::size_t rows) {
    Floats2d Y({rows, 3});
    for (std::size_t i = 0; i < rows; ++i) Y(i, i % 3) = 1.0f;
    return Y;
}

template <class M>
void good_step(M& model, Optimizer& opt, const Floats2d& X) {
    auto [P, backprop] = model.begin_update(X);
    backprop(CategoricalCrossentropy().get_grad(P, onehot(X.shape(0))));
    model.finish_update(opt);
}

// Every gradient of the model, in walk order.
std::vector<float> all_grads(Node& model) {
    std::vector<float> out;
    for (Node* n : model.walk())
        for (const auto& name : n->param_names())
            if (n->has_param(name)) {
                const auto g = std::as_const(*n).get_grad(name);
                out.insert(out.end(), g.data, g.data + g.size());
            }
    return out;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

template <class F>
std::string error_of(F&& f, std::string* id = nullptr) {
    try {
        f();
    } catch (const Error& e) {
        if (id) *id = e.id();
        return e.what();
    }
    return "";
}
}  // namespace

TEST_CASE("nonfinite: one inf in dY is refused with nothing changed", "[nonfinite]") {
    auto model = make_model();
    Optimizer opt = Adam(0.001);
    const Floats2d X = testing::random_array(6, 4, 1);
    good_step(model, opt, X);  // moments and averages exist
    good_step(model, opt, X);

    auto [P, backprop] = model.begin_update(X);
    Floats2d dY = CategoricalCrossentropy().get_grad(P, onehot(6));
    dY(2, 1) = kInf;
    backprop(dY);

    const auto weights = model.to_bytes();
    const auto state = optimizer_to_bytes(opt, model);
    const auto grads = all_grads(model);
    std::string id;
    const std::string msg = error_of([&] { model.finish_update(opt); }, &id);
    CHECK(id == "tenon-E250");
    // The first parameter in walk order with a NaN or inf: the Relu's W (dX carried the inf).
    CHECK_THAT(msg, Contains("chain>0>relu: parameter W: ") && Contains("non-finite gradient values") &&
                        Contains("other parameters have non-finite gradients too"));
    CHECK(model.to_bytes() == weights);
    CHECK(optimizer_to_bytes(opt, model) == state);
    CHECK(same_bits(all_grads(model), grads));
    CHECK(opt.nr_update(model.walk()[1]->id(), "W") == 2);
    CHECK(opt.skipped_steps() == 0);
}

TEST_CASE("nonfinite: the error names the parameter by its path, with the count", "[nonfinite]") {
    auto model = make_model();
    Optimizer opt = Adam(0.001);
    const Floats2d X = testing::random_array(6, 4, 2);
    good_step(model, opt, X);
    auto [P, backprop] = model.begin_update(X);
    backprop(CategoricalCrossentropy().get_grad(P, onehot(6)));
    Node& softmax = *model.walk()[2];
    REQUIRE(softmax.name().rfind("softmax", 0) == 0);
    auto g = softmax.get_grad("W");
    g.data[0] = kNaN;
    g.data[3] = kInf;
    g.data[5] = -kInf;
    const auto weights = model.to_bytes();
    std::string id;
    const std::string msg = error_of([&] { model.finish_update(opt); }, &id);
    CHECK(id == "tenon-E250");
    CHECK_THAT(msg, Contains("chain>1>softmax: parameter W: 3 non-finite gradient values"));
    CHECK_THAT(msg, !Contains("other parameter"));
    CHECK(model.to_bytes() == weights);
}

TEST_CASE("nonfinite: NonFinite::skip skips the step, counts it and zeroes the gradients", "[nonfinite]") {
    auto model = make_model();
    Optimizer opt = Adam({.on_nonfinite = NonFinite::skip});
    const Floats2d X = testing::random_array(6, 4, 3);
    good_step(model, opt, X);
    const auto weights = model.to_bytes();
    // The optimizer's state but for the count of skipped steps (which it holds, and saves:
    // format version 2), here raised by two skipped updates of a parameter outside the model.
    Optimizer counted = opt;
    for (int i = 0; i < 2; ++i) {
        Floats1d w({1}), g({1});
        g[0] = kNaN;
        counted.update(987654321, "W", w.view(), g.view());
    }
    const auto state = optimizer_to_bytes(counted, model);
    for (int i = 0; i < 2; ++i) {
        auto [P, backprop] = model.begin_update(X);
        Floats2d dY = CategoricalCrossentropy().get_grad(P, onehot(6));
        dY(0, 0) = kNaN;
        backprop(dY);
        REQUIRE_NOTHROW(model.finish_update(opt));
    }
    CHECK(opt.skipped_steps() == 2);
    CHECK(model.to_bytes() == weights);
    CHECK(optimizer_to_bytes(opt, model) == state);
    for (float v : all_grads(model)) CHECK(v == 0.0f);
    // A finite step afterwards trains as usual.
    good_step(model, opt, X);
    CHECK(model.to_bytes() != weights);
    CHECK(opt.skipped_steps() == 2);
    CHECK(opt.nr_update(model.walk()[1]->id(), "W") == 2);
}

TEST_CASE("nonfinite: loading an optimizer state keeps the optimizer's policy", "[nonfinite]") {
    auto model = make_model();
    Optimizer saved = Adam(0.001);
    good_step(model, saved, testing::random_array(6, 4, 10));
    Optimizer opt = Adam({.on_nonfinite = NonFinite::skip});
    optimizer_from_bytes(opt, model, optimizer_to_bytes(saved, model));
    CHECK(opt.options().on_nonfinite == NonFinite::skip);
    CHECK(opt.nr_update(model.walk()[1]->id(), "W") == 1);
}

TEST_CASE("nonfinite: Optimizer::update checks its gradient", "[nonfinite]") {
    Floats1d w({4}), g({4});
    g[1] = kNaN;
    Optimizer opt = Adam(0.1);
    std::string id;
    CHECK_THAT(error_of([&] { opt.update(1, "W", w.view(), g.view()); }, &id),
               Contains("parameter W: 1 non-finite gradient value "));
    CHECK(id == "tenon-E250");
    CHECK(opt.nr_update(1, "W") == 0);
    Optimizer skip = SGD(0.1);
    skip = Optimizer({.learn_rate = 0.1, .beta1 = 0, .beta2 = 0, .on_nonfinite = NonFinite::skip});
    skip.update(1, "W", w.view(), g.view());
    CHECK(skip.skipped_steps() == 1);
    CHECK(g[1] == 0.0f);
    for (float v : w) CHECK(v == 0.0f);
}

TEST_CASE("nonfinite: huge finite gradients are clipped, not zeroed", "[nonfinite]") {
    // Squares above float's range: the float partial sums overflow, the norm is taken again
    // in double (it used to be inf, and the step scaled the gradient by 0).
    Floats1d w({40}), g({40});
    for (float& v : g) v = 1e30f;
    Optimizer opt = SGD(1.0, 0.0, /*grad_clip=*/1.0, /*use_averages=*/false);
    opt.update(1, "W", w.view(), g.view());
    for (float v : w) CHECK(v == Approx(-1.0 / std::sqrt(40.0)).epsilon(1e-5));
}

TEST_CASE("nonfinite: hyperparameters are checked when the optimizer is made", "[nonfinite]") {
    const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
    auto refused = [](auto make, const std::string& what) {
        std::string id;
        const std::string msg = error_of(make, &id);
        CHECK(id == "tenon-E251");
        CHECK_THAT(msg, Contains(what));
    };
    refused([&] { (void)Adam(nan); }, "learn_rate = nan");
    refused([&] { (void)Adam(-1); }, "learn_rate = -1");
    refused([&] { (void)Adam(inf); }, "learn_rate = inf");
    refused([&] { (void)SGD(-0.5); }, "learn_rate = -0.5");
    refused([&] { (void)Adam({.beta1 = 1.0}); }, "beta1 = 1");
    refused([&] { (void)Adam({.beta2 = -0.1}); }, "beta2 = -0.1");
    refused([&] { (void)Adam({.eps = 0.0}); }, "eps = 0");
    refused([&] { (void)Adam({.grad_clip = -1.0}); }, "grad_clip = -1");
    refused([&] { (void)Adam({.grad_clip = nan}); }, "grad_clip = nan");
    refused([&] { (void)Adam({.L2 = nan}); }, "L2 = nan");
    refused([&] {
        Optimizer o = Adam();
        o.set_learn_rate(nan);
    }, "learn_rate = nan");
    CHECK_NOTHROW(Adam(0.0));
    CHECK_NOTHROW(SGD(0.1, 1e-4, 0.0, false));
    CHECK_NOTHROW(Adam({.grad_clip = inf}));
}

TEST_CASE("nonfinite: a NaN in the input is refused unless the check is off", "[nonfinite]") {
    auto model = make_model();
    Floats2d X = testing::random_array(5, 4, 4);
    const Floats2d P0 = model.predict(X);
    X(3, 2) = kNaN;
    X(4, 0) = kInf;
    std::string id;
    CHECK_THAT(error_of([&] { (void)model.predict(X); }, &id),
               Contains("predict: the input holds 2 non-finite values (NaN or inf), the first at [3, 2] (nan)"));
    CHECK(id == "tenon-E252");
    CHECK_THAT(error_of([&] { (void)model.begin_update(X); }, &id), Contains("begin_update: the input holds 2"));
    CHECK_THAT(error_of([&] { (void)model(X, false); }, &id), Contains("the input holds 2"));
    auto plan = lower(model);
    CHECK_THAT(error_of([&] { (void)plan.predict(X); }, &id), Contains("plan of ") && Contains("the first at [3, 2]"));
    CHECK_THAT(error_of([&] { (void)plan.begin_update(X); }, &id), Contains("begin_update: the input holds 2"));

    REQUIRE(check_finite_inputs());
    set_check_finite_inputs(false);
    Floats2d P;
    CHECK_NOTHROW(P = model.predict(X));
    CHECK_NOTHROW(plan.predict(X));
    set_check_finite_inputs(true);
    // The clean rows are as before (a NaN row gives what the layers make of it).
    for (std::size_t j = 0; j < 3; ++j) CHECK(P(0, j) == P0(0, j));
}

TEST_CASE("nonfinite: only the outer input is checked; inner layers see what the model computed",
          "[nonfinite]") {
    // A Relu whose weights overflow makes inf inside the model: the input was fine, so
    // predict does not throw E252 (the loss warning and the optimizer catch what follows).
    auto model = make_model();
    auto W = model.walk()[1]->get_param("W");
    for (std::size_t i = 0; i < W.size(); ++i) W.data[i] = 1e30f;
    const Floats2d X = testing::random_array(2, 4, 5, 10.0, 20.0);
    CHECK_NOTHROW(model.predict(X));
}

TEST_CASE("nonfinite: sequence inputs", "[nonfinite]") {
    auto model = with_array<List<Floats2d>>(Relu<3, 4>());
    model.initialize();
    List<Floats2d> xs{testing::random_array(2, 4, 6), testing::random_array(3, 4, 7)};
    CHECK_NOTHROW(model.predict(xs));
    xs[1](2, 3) = kNaN;
    CHECK_THAT(error_of([&] { (void)model.predict(xs); }),
               Contains("the input's array 1 holds 1 non-finite value (NaN or inf), the first at [2, 3]"));

    auto rmodel = with_array<Ragged>(Relu<3, 4>());
    rmodel.initialize();
    Floats2d data = testing::random_array(5, 4, 8);
    data(4, 1) = -kInf;
    const Ragged r(std::move(data), {2, 3});
    CHECK_THAT(error_of([&] { (void)rmodel.predict(r); }), Contains("the input's data holds 1 non-finite value"));
}

TEST_CASE("nonfinite: training at a learning rate far too high stops with an error", "[nonfinite]") {
    auto model = Relu<64, 4>() >> Relu<64>() >> Softmax<3>();
    model.initialize();
    Optimizer opt = SGD(1e30, 0.0, /*grad_clip=*/0.0);
    const Floats2d X = testing::random_array(16, 4, 9);
    std::string id;
    for (int i = 0; i < 20 && id.empty(); ++i) {
        try {
            good_step(model, opt, X);
        } catch (const Error& e) {
            id = e.id();
        }
    }
    CHECK((id == "tenon-E250" || id == "tenon-E134"));
}

TEST_CASE("nonfinite: the loss says a non-finite guess is a model gone wrong, not a missing Softmax", "[nonfinite]") {
    Floats2d G({2, 3});
    for (float& g : G) g = 1.0f / 3.0f;
    Floats2d T({2, 3});
    T.data()[0] = T.data()[4] = 1.0f;
    G.data()[5] = std::numeric_limits<float>::quiet_NaN();
    CHECK_THROWS_WITH(CategoricalCrossentropy().get_grad(G, T),
                      Catch::Matchers::Contains("tenon-E134") && Catch::Matchers::Contains("NaN at [1, 2]") &&
                          Catch::Matchers::Contains("not finite") && !Catch::Matchers::Contains("Softmax"));
    G.data()[5] = 1.5f;  // finite but not a probability: the usual hint
    CHECK_THROWS_WITH(CategoricalCrossentropy().get_grad(G, T),
                      Catch::Matchers::Contains("at [1, 2]") && Catch::Matchers::Contains("put a Softmax"));
}

TEST_CASE("nonfinite: set_param refuses NaN and inf values and changes nothing (tenon-E119)", "[nonfinite]") {
    auto model = make_model();
    auto& relu = model.layer<0>();
    const std::vector<float> before(relu.get_param("W").begin(), relu.get_param("W").end());
    Floats2d W({8, 4});
    W[7] = kNaN;
    W[9] = -kInf;
    std::string id;
    CHECK_THAT(error_of([&] { relu.set_param("W", param_view(W)); }, &id),
               Contains("relu: set_param('W'): the values hold 2 non-finite values (NaN or inf), the first at flat "
                        "index 7"));
    CHECK(id == "tenon-E119");
    const std::vector<float> after(relu.get_param("W").begin(), relu.get_param("W").end());
    CHECK(same_bits(before, after));
    W[7] = 0.5f;
    W[9] = -0.5f;
    CHECK_NOTHROW(relu.set_param("W", param_view(W)));  // finite values are set
    CHECK(relu.get_param("W").flat()[7] == 0.5f);
}

TEST_CASE("nonfinite: a Relu passes a NaN on, as Thinc's does, on the plan and on the layers' path", "[nonfinite]") {
    // Thinc's relu zeroes X where X <= 0: a NaN stays NaN (it used to come out as 0 here: a
    // plausible row made from no data). -inf is 0, +inf stays.
    auto model = Relu<3, 1>();
    model.initialize();
    model.set_param("W", param_view(Floats2d({3, 1}, {1, 2, -1})));
    model.set_param("b", param_view(Floats1d({3}, {0, 0, 0})));
    const Floats2d X({4, 1}, {kNaN, -kInf, kInf, 2.0f});
    set_check_finite_inputs(false);
    for (const bool plans : {true, false}) {
        const Floats2d Y = testing::predict_via(plans, model, X);
        for (std::size_t j = 0; j < 3; ++j) CHECK(std::isnan(Y(0, j)));
        CHECK(Y(1, 0) == 0.0f);
        CHECK(Y(1, 1) == 0.0f);
        CHECK(Y(1, 2) == kInf);
        CHECK(Y(2, 0) == kInf);
        CHECK(Y(2, 2) == 0.0f);
        CHECK(Y(3, 1) == 4.0f);
        CHECK(Y(3, 2) == 0.0f);
    }
    set_check_finite_inputs(true);
}
