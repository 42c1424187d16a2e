// Frozen weights (Plan::freeze_weights; docs/lowering.md, "Frozen weights"): a frozen plan's
// predict gives the unfrozen plan's bits from 5 rows on, and at 1-4 rows each row's bits as
// inside a larger batch (1 and 2 threads, batches of 1 to 1024, widths that leave edge tiles,
// inputs with many zeros, dense and maxout stages with a fused LayerNorm; a non-finite weight
// still reaches every output it touches), follows every tenon path
// that writes the weights (never a stale read), and while another thread calls set_param,
// every concurrent call gets the old or the new weights' result. meson runs this program once
// per kernel target (TENON_GEMM_TARGET): tenon's two kernels prepack, the generic one does not
// (its frozen plan keeps no copies and must still give the same results).
#include <catch2/catch.hpp>

#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "tenon/backend/cpu/gemm.hpp"
#include "tenon/backend/cpu/threads.hpp"
#include "tenon/lower/lower.hpp"
#include "tenon/tenon.hpp"
#include "unit/helpers.hpp"

using namespace tenon;
using Catch::Matchers::Contains;
using testing::random_array;
using testing::same;

namespace {

// Whether the backend keeps W packed (tenon's kernels; not the generic one).
bool prepacks() { return cpu_ops().prepacked_size(8, 8) > 0; }

// Random values for parameter `name` of n (its shape), from seed.
std::vector<float> random_values(const Node& n, const char* name, std::uint64_t seed) {
    const CParamView p = n.get_param(name);
    Rng rng(seed);
    std::vector<float> v(p.size());
    for (float& x : v) x = static_cast<float>(rng.uniform(-0.5, 0.5));
    return v;
}
void set_values(Node& n, const char* name, const std::vector<float>& v) {
    CParamView p = std::as_const(n).get_param(name);
    p.data = v.data();
    n.set_param(name, p);
}
// Every parameter random (a Softmax starts at zero weights; LayerNorm at G = 1, b = 0).
void randomize(Node& model, std::uint64_t seed) {
    for (Node* n : model.walk())
        for (const auto& name : n->param_names())
            if (n->has_param(name)) set_values(*n, name.c_str(), random_values(*n, name.c_str(), seed++));
}
Node* find(Node& model, const std::string& name) {
    for (Node* n : model.walk())
        if (n->name() == name) return n;
    return nullptr;
}

// X's rows as predicted inside a batch of at least 5 rows (the packed product: what a frozen
// plan computes for each row at any batch size; an unfrozen plan's 1-4 rows are dot
// products, which round differently).
template <class P>
Floats2d as_in_batch(const P& plan, const Floats2d& X, std::uint64_t seed) {
    const std::size_t m = X.shape(0), nI = X.shape(1);
    if (m >= 5) return plan.predict(X);
    Floats2d big = random_array(5, nI, seed);
    std::copy(X.begin(), X.end(), big.data());
    const Floats2d P5 = plan.predict(big);
    Floats2d out({m, P5.shape(1)}, uninitialized);
    std::copy(P5.data(), P5.data() + out.size(), out.data());
    return out;
}
// Half of X's values zero (an image's background, a ReLU's output): the frozen few-row path
// skips those inputs' weights.
Floats2d with_zeros(Floats2d X, std::uint64_t seed) {
    Rng rng(seed);
    for (float& x : X)
        if (rng.uniform(0.0, 1.0) < 0.5) x = 0.0f;
    return X;
}

template <class M>
void check_same_bits(M& model, std::size_t nI, std::uint64_t seed) {
    auto plain = lower(model);
    auto frozen = lower(model);
    frozen.freeze_weights();
    CHECK(frozen.weights_frozen());
    CHECK((frozen.frozen_values() > 0) == prepacks());
    for (std::size_t threads : {1, 2}) {
        set_num_threads(threads);
        for (std::size_t batch : {1, 2, 3, 4, 5, 128, 1024})
            for (bool zeros : {false, true}) {
                INFO("threads " << threads << " batch " << batch << (zeros ? ", half the inputs zero" : ""));
                Floats2d X = random_array(batch, nI, seed++);
                if (zeros) X = with_zeros(std::move(X), seed++);
                if (prepacks()) CHECK(same(frozen.predict(X), as_in_batch(plain, X, seed++)));
                if (batch >= 5 || !prepacks()) CHECK(same(frozen.predict(X), plain.predict(X)));
            }
    }
    set_num_threads(0);
    frozen.thaw_weights();
    CHECK(!frozen.weights_frozen());
    CHECK(frozen.frozen_values() == 0);
}

}  // namespace

TEST_CASE("frozen: predict gives the packed product's bits at every batch size", "[frozen]") {
    INFO("kernel " << cpu::gemm_target());
    SECTION("the Fashion-MNIST MLP") {
        auto model = Relu<512>() >> Relu<512>() >> Softmax<10>();
        model.initialize(random_array(8, 784, 1));
        randomize(model, 10);
        check_same_bits(model, 784, 100);
    }
    SECTION("odd widths, maxout, layer norm, a residual block") {
        auto model = Relu<37>({.normalize = true}) >> Maxout<19, dyn, 3>({.normalize = true}) >>
                     residual(Relu<19>()) >> Linear<45>() >> Softmax<7>();
        model.initialize(random_array(8, 33, 2));
        randomize(model, 20);
        check_same_bits(model, 33, 200);
    }
}

// 0 * inf is NaN: with a non-finite weight, the few-row path (which skips zero inputs) is not
// taken, and a zero input against an infinite weight gives the batched product's NaN.
TEST_CASE("frozen: a non-finite weight reaches the outputs at batch 1 as in a batch", "[frozen]") {
    INFO("kernel " << cpu::gemm_target());
    auto model = Linear<8>() >> Linear<3>();
    model.initialize(random_array(4, 6, 1));
    randomize(model, 5);
    Node& first = model.layer<0>();
    auto W = random_values(first, "W", 6);
    set_values(first, "W", W);
    // (Written through the view: set_param refuses non-finite values, tenon-E119.)
    first.get_param("W").flat()[1 * 6 + 2] = std::numeric_limits<float>::infinity();  // W[1, 2]
    auto frozen = lower(model);
    frozen.freeze_weights();
    Floats2d X = random_array(1, 6, 7);
    X(0, 2) = 0.0f;
    const Floats2d P = frozen.predict(X), Q = prepacks() ? as_in_batch(lower(model), X, 8) : lower(model).predict(X);
    REQUIRE(P.size() == Q.size());
    CHECK(std::isnan(P(0, 0)));
    CHECK(std::memcmp(P.data(), Q.data(), P.size() * sizeof(float)) == 0);
}

TEST_CASE("frozen: predict follows every write of the weights", "[frozen]") {
    INFO("kernel " << cpu::gemm_target());
    auto make = [] { return Relu<24>() >> Maxout<12, dyn, 2>({.normalize = true}) >> Linear<6>(); };
    auto model = make();
    const Floats2d X = random_array(9, 20, 3);
    model.initialize(X);
    randomize(model, 30);
    auto plan = lower(model);
    plan.freeze_weights();
    const Floats2d before = plan.predict(X);
    // The frozen plan's result equals an unfrozen plan's on the model as it is now, and the
    // write changed it (so a stale copy would show).
    auto follows = [&] {
        const Floats2d now = plan.predict(X);
        CHECK(same(now, lower(model).predict(X)));
        CHECK(!same(now, before));
    };
    Node& relu = model.layer<0>();

    SECTION("an optimizer step (finish_update)") {
        Optimizer opt = Adam(0.01);
        auto [Y, backprop] = plan.begin_update(X);
        backprop.params_only(random_array(9, 6, 4));
        model.finish_update(opt);
        follows();
    }
    SECTION("set_param") {
        set_values(relu, "W", random_values(relu, "W", 5));
        follows();
    }
    SECTION("set_param on a bias and on a fused LayerNorm's G") {
        set_values(model.layer<2>(), "b", random_values(model.layer<2>(), "b", 6));
        follows();
        Node* ln = find(model, "layernorm");
        REQUIRE(ln);
        const Floats2d mid = plan.predict(X);
        set_values(*ln, "G", random_values(*ln, "G", 7));
        CHECK(same(plan.predict(X), lower(model).predict(X)));
        CHECK(!same(plan.predict(X), mid));
    }
    SECTION("a write through the non-const get_param") {
        ParamView W = relu.get_param("W");
        for (float& w : W) w *= -1.0f;
        follows();
    }
    SECTION("from_bytes, a file, a Thinc file") {
        auto other = make();
        other.initialize(X);
        randomize(other, 40);
        model.from_bytes(other.to_bytes());
        follows();
        CHECK(same(plan.predict(X), lower(other).predict(X)));
        randomize(other, 50);
        const std::string path = "frozen_test_" + std::to_string(std::uint64_t(std::hash<std::thread::id>{}(
                                                      std::this_thread::get_id()))) + ".tenon";
        other.to_disk(path);
        model.from_disk(path);
        std::remove(path.c_str());
        CHECK(same(plan.predict(X), lower(other).predict(X)));
    }
    SECTION("use_params, in its scope and after it") {
        const auto other = random_values(relu, "W", 8);
        {
            ParamValues p{{{relu.id(), "W"}, CParamView{other.data(), {other.size()}, 1}}};
            auto guard = use_params(model, p);
            follows();
        }
        CHECK(same(plan.predict(X), before));
    }
    SECTION("initialize again, with the same widths and with other widths and back") {
        fix_random_seed(77);
        model.initialize(X);
        follows();
        // Other widths: the held plan refuses (tenon-E172) rather than read anything ...
        const Floats2d X2 = random_array(9, 14, 9);
        for (Node* n : model.walk())
            if (n->has_dim("nI") && n->name() == "relu") n->set_dim("nI", 14, true);
        model.initialize(X2);
        CHECK_THROWS_WITH(plan.predict(X2), Contains("tenon-E172"));
        // ... and back at the widths it was made for, it reads the new weights.
        for (Node* n : model.walk())
            if (n->has_dim("nI") && n->name() == "relu") n->set_dim("nI", 20, true);
        fix_random_seed(78);
        model.initialize(X);
        follows();
    }
    SECTION("an assignment, replace_node, and a copy's own plan") {
        auto copy = model;
        auto copy_plan = lower(copy);
        copy_plan.freeze_weights();
        CHECK(same(copy_plan.predict(X), before));
        auto other = make();
        other.initialize(X);
        randomize(other, 60);
        model = other;
        follows();
        CHECK(same(copy_plan.predict(X), before));  // the copy's values did not change
        copy = model;
        CHECK(same(copy_plan.predict(X), plan.predict(X)));
        randomize(other, 70);
        CHECK(model.replace_node(model.layer<1>(), other.layer<1>()));
        CHECK(same(plan.predict(X), lower(model).predict(X)));
    }
}

// model.freeze_weights(): the model's own predict runs a frozen plan (the engine's), with the
// same bits, seeing writes of the weights, across a change of widths (a new plan, frozen too),
// in a copy of the model, and back to unfrozen with thaw_weights.
TEST_CASE("frozen: a model's own predict with freeze_weights()", "[frozen]") {
    INFO("kernel " << cpu::gemm_target());
    auto model = Relu<24>() >> Maxout<12, dyn, 2>({.normalize = true}) >> Linear<6>();
    const Floats2d X = random_array(9, 20, 11);
    model.initialize(X);
    randomize(model, 90);
    const Floats2d plain = model.predict(X);
    CHECK(!model.weights_frozen());
    CHECK(model.frozen_values() == 0);

    CHECK(model.freeze_weights());
    CHECK(model.weights_frozen());
    CHECK((model.frozen_values() > 0) == prepacks());
    CHECK(same(model.predict(X), plain));
    CHECK(model.uses_plan());
    // Training is not affected, and the next predict sees the step.
    Optimizer opt = Adam(0.01);
    auto [Y, backprop] = model.begin_update(X);
    CHECK(same(Y, plain));
    backprop.params_only(random_array(9, 6, 12));
    model.finish_update(opt);
    const Floats2d stepped = model.predict(X);
    CHECK(!same(stepped, plain));
    CHECK(same(stepped, lower(model).predict(X)));
    // set_param on the first layer's W.
    Node& relu = model.layer<0>();
    set_values(relu, "W", random_values(relu, "W", 13));
    CHECK(same(model.predict(X), lower(model).predict(X)));
    CHECK(!same(model.predict(X), stepped));

    SECTION("a copy keeps the setting and its own plan") {
        auto copy = model;
        CHECK(copy.weights_frozen());
        CHECK(same(copy.predict(X), model.predict(X)));
        CHECK((copy.frozen_values() > 0) == prepacks());
    }
    SECTION("other widths: the new plan is frozen too") {
        const Floats2d X2 = random_array(9, 14, 14);
        relu.set_dim("nI", 14, true);
        model.initialize(X2);
        CHECK(same(model.predict(X2), lower(model).predict(X2)));
        CHECK((model.frozen_values() > 0) == prepacks());
    }
    SECTION("thaw_weights") {
        model.thaw_weights();
        CHECK(!model.weights_frozen());
        CHECK(model.frozen_values() == 0);
        CHECK(same(model.predict(X), lower(model).predict(X)));
        CHECK(model.frozen_values() == 0);
    }
    SECTION("before initialize: nothing to freeze yet, the setting stays") {
        auto fresh = Relu<24>() >> Linear<6>();
        CHECK(!fresh.freeze_weights());
        CHECK(fresh.weights_frozen());
        fresh.initialize(X);
        CHECK(same(fresh.predict(X), lower(fresh).predict(X)));
        CHECK((fresh.frozen_values() > 0) == prepacks());
    }
}

TEST_CASE("frozen: set_param while 4 threads predict gives each call the old or the new weights'",
          "[frozen][threads]") {
    INFO("kernel " << cpu::gemm_target());
    if (!prepacks()) {
        WARN("the kernel does not prepack: a frozen plan keeps no copies here (the model's own guarantee applies)");
        return;
    }
    auto model = Relu<64>() >> Relu<48>() >> Linear<10>();
    model.initialize(random_array(4, 40, 11));
    randomize(model, 80);
    Node& relu = model.layer<0>();
    const auto WA = testing::values(std::as_const(relu).get_param("W"));
    const auto WB = random_values(relu, "W", 90);
    const Floats2d X1 = random_array(1, 40, 12), X64 = random_array(64, 40, 13);
    const auto reference = lower(model);
    const Floats2d A1 = as_in_batch(reference, X1, 14), A64 = reference.predict(X64);
    set_values(relu, "W", WB);
    const Floats2d B1 = as_in_batch(reference, X1, 14), B64 = reference.predict(X64);
    set_values(relu, "W", WA);
    REQUIRE(!same(A64, B64));

    auto plan = lower(model);
    plan.freeze_weights();
    std::atomic<bool> stop{false};
    std::atomic<int> bad{0}, calls{0};
    std::vector<std::thread> readers;
    for (int t = 0; t < 4; ++t)
        readers.emplace_back([&, t] {
            for (int i = 0; !stop.load() || i < 20; ++i) {
                const bool one = (i + t) % 2 == 0;
                const Floats2d P = plan.predict(one ? X1 : X64);
                if (one ? !(same(P, A1) || same(P, B1)) : !(same(P, A64) || same(P, B64))) ++bad;
                ++calls;
            }
        });
    for (int i = 0; i < 300; ++i) {
        set_values(relu, "W", i % 2 ? WA : WB);
        std::this_thread::yield();
    }
    set_values(relu, "W", WB);
    stop = true;
    for (auto& r : readers) r.join();
    CHECK(bad.load() == 0);
    CHECK(calls.load() >= 80);
    // After the writer's last set_param, every call sees it.
    CHECK(same(plan.predict(X64), B64));
}
