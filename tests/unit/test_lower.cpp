// The lowering pass (include/tenon/lower/): for every fusion rule, the plan's predict,
// forward, dX and parameter gradients equal the model's own (same seed, so the same
// dropout masks), and describe_plan says what it does.
#include <catch2/catch.hpp>

#include <atomic>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "tenon/backend/cpu/threads.hpp"
#include "tenon/lower/lower.hpp"
#include "tenon/tenon.hpp"
#include "unit/helpers.hpp"

using namespace tenon;
using testing::random_array;

namespace {

void zero_grads(Node& model) {
    for (Node* n : model.walk())
        for (const auto& name : n->param_names())
            if (n->has_param(name))
                for (float& g : n->get_grad(name)) g = 0.0f;
}
std::vector<std::vector<float>> grads(Node& model) { return testing::all_grads(model); }
std::vector<std::vector<float>> params(Node& model) { return testing::all_params(model); }
template <class A, class B>
void check_close(const A& a, const B& b, const char* what) {
    INFO(what);
    REQUIRE(a.size() == b.size());
    std::size_t bad = 0;
    float worst = 0.0f;
    for (std::size_t i = 0; i < a.size(); ++i) {
        const float x = a.data()[i], y = b.data()[i];
        const float err = std::fabs(x - y) / (1.0f + std::fabs(y));
        if (!(err <= 1e-6f)) ++bad;
        if (err > worst) worst = err;
    }
    INFO("worst relative+absolute error " << worst);
    CHECK(bad == 0);
}
struct Vec {
    const std::vector<float>& v;
    std::size_t size() const { return v.size(); }
    const float* data() const { return v.data(); }
};

// Model vs plan on X: predict, forward, dX and every gradient. Returns the plan's describe().
template <class M, class X>
std::string check_plan(M& model, const X& x, std::uint64_t seed, bool compare_dx = true) {
    auto plan = lower(model);
    auto layers = unfused(model);  // the model's layers, each by itself: the reference
    check_close(plan.predict(x), layers.predict(x), "predict");
    for (int step = 0; step < 2; ++step) {  // twice: the workspace is reused
        zero_grads(model);
        fix_random_seed(seed + step);
        auto [Y1, bp1] = layers.begin_update(x);
        const Floats2d dY = random_array(Y1.shape(0), Y1.shape(1), seed + 100 + step);
        auto dX1 = bp1(dY);
        const auto g1 = grads(model);
        zero_grads(model);
        fix_random_seed(seed + step);
        auto [Y2, bp2] = plan.begin_update(x);
        check_close(Y2, Y1, "forward");
        auto dX2 = bp2(dY);
        if constexpr (std::is_same_v<decltype(dX2), Floats2d>)
            if (compare_dx) check_close(dX2, dX1, "dX");
        const auto g2 = grads(model);
        REQUIRE(g1.size() == g2.size());
        for (std::size_t i = 0; i < g1.size(); ++i) check_close(Vec{g2[i]}, Vec{g1[i]}, "gradient");
        // params_only: the same gradients without dX (every stage that reads or writes the
        // input's gradient skips it)
        zero_grads(model);
        fix_random_seed(seed + step);
        auto [Y3, bp3] = plan.begin_update(x);
        bp3.params_only(dY);
        const auto g3 = grads(model);
        REQUIRE(g1.size() == g3.size());
        for (std::size_t i = 0; i < g1.size(); ++i) check_close(Vec{g3[i]}, Vec{g1[i]}, "gradient (params_only)");
    }
    return plan.describe();
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("lower: the MLP is three gemm stages with fused tails", "[lower]") {
    auto model = Relu<64>({.dropout = 0.2}) >> Relu<64>({.dropout = 0.2}) >> Softmax<10>();
    const Floats2d X = random_array(37, 32, 1);
    model.initialize(X);
    const std::string d = check_plan(model, X, 7);
    INFO(d);
    CHECK(contains(d, "stage 0: gemm 32->64 | bias, relu, dropout(0.2)"));
    CHECK(contains(d, "stage 1: gemm 64->64 | bias, relu, dropout(0.2)"));
    CHECK(contains(d, "stage 2: gemm 64->10 | bias, softmax"));
    CHECK(!contains(d, "stage 3"));
    const std::string w = describe_plan(model, 128);
    INFO(w);
    CHECK(contains(w, "training workspace for batch 128"));
    CHECK(contains(w, "stage 0 dropout mask (128x64)"));
    CHECK(contains(w, "predict workspace for batch 128"));
}

TEST_CASE("lower: large row passes split over threads give the model's bits", "[lower][threads]") {
    // 300 x 64 values per pass: over row_pass_split_work, so the rows are split
    auto model = Relu<64>({.dropout = 0.3}) >> LayerNorm<>() >> Dropout(0.2) >> Maxout<32, dyn, 3>({.dropout = 0.1}) >> Softmax<7>();
    const Floats2d X = random_array(300, 40, 9);
    model.initialize(X);
    for (std::size_t threads : {1, 2, 3}) {
        set_num_threads(threads);
        INFO(threads << " threads");
        check_plan(model, X, 41);
    }
    set_num_threads(0);
}

// finish_update leaves the gradients as lazy zeros (Node::Param): the plan's next weight
// gradient product overwrites them (beta = 0), the model's own layers clear them first.
TEST_CASE("lower: training through the plan equals the model's own training", "[lower]") {
    auto a = Relu<48>({.dropout = 0.2}) >> Maxout<24, dyn, 2>({.normalize = true}) >> Softmax<6>();
    const Floats2d X = random_array(40, 30, 12);
    a.initialize(X);
    auto b = a;  // the same weights
    auto plan = lower(b);
    Optimizer oa = Adam(0.01), ob = Adam(0.01);
    for (int step = 0; step < 6; ++step) {
        const Floats2d dY = random_array(40, 6, 200 + step);
        // step 2 accumulates two backprops (the second adds to the first), step 4 uses
        // params_only, and step 5 has no backprop at all (the optimizer sees zero gradients)
        const int passes = step == 2 ? 2 : step == 5 ? 0 : 1;
        for (int k = 0; k < passes; ++k) {
            fix_random_seed(50 + step * 2 + k);
            auto [Ya, bpa] = unfused(a).begin_update(X);  // a trains through its layers
            bpa(dY);
            fix_random_seed(50 + step * 2 + k);
            auto [Yb, bpb] = plan.begin_update(X);
            if (step == 4) bpb.params_only(dY);
            else bpb(dY);
        }
        // (reading the gradients here does not clear a lazy zero: the backprops wrote them)
        const auto ga = grads(a), gb = grads(b);
        for (std::size_t i = 0; i < ga.size(); ++i) check_close(Vec{gb[i]}, Vec{ga[i]}, "gradient before the update");
        a.finish_update(oa);
        b.finish_update(ob);
        const auto pa = params(a), pb = params(b);
        REQUIRE(pa.size() == pb.size());
        for (std::size_t i = 0; i < pa.size(); ++i) check_close(Vec{pb[i]}, Vec{pa[i]}, "parameter after the update");
    }
    for (const auto& g : grads(b))
        for (float v : g) REQUIRE(v == 0.0f);  // a lazy zero reads as zero
}

TEST_CASE("lower: every dense activation with its LayerNorm and Dropout tail", "[lower]") {
    const Floats2d X = random_array(19, 12, 2);
    SECTION("linear") {
        auto m = Linear<8>() >> Linear<5>();
        m.initialize(X);
        CHECK(contains(check_plan(m, X, 3), "gemm 12->8 | bias"));
    }
    SECTION("relu, normalize and dropout") {
        auto m = Relu<16>({.dropout = 0.3, .normalize = true}) >> Relu<16>({.normalize = true}) >> Linear<3>();
        m.initialize(X);
        CHECK(contains(check_plan(m, X, 4), "gemm 12->16 | bias, relu, layernorm, dropout(0.3)"));
    }
    SECTION("sigmoid") {
        auto m = Sigmoid<16>() >> Sigmoid<4>();
        m.initialize(X);
        for (Node* n : m.walk())
            if (n->has_param("W"))
                for (float& w : n->get_param("W")) w = 0.3f * std::sin(float(&w - n->get_param("W").data));
        CHECK(contains(check_plan(m, X, 5), "bias, sigmoid"));
    }
    SECTION("mish") {
        auto m = Mish<16>({.dropout = 0.1}) >> Mish<16>({.dropout = 0.2, .normalize = true}) >> Linear<2>();
        m.initialize(X);
        CHECK(contains(check_plan(m, X, 6), "bias, mish, layernorm, dropout(0.2)"));
    }
    SECTION("gelu") {
        auto m = Gelu<16>({.dropout = 0.1}) >> Gelu<16>({.dropout = 0.2, .normalize = true}) >> Linear<2>();
        m.initialize(X);
        const std::string d = check_plan(m, X, 31);
        CHECK(contains(d, "gemm 12->16 | bias, gelu, dropout(0.1)"));
        CHECK(contains(d, "bias, gelu, layernorm, dropout(0.2)"));
    }
    SECTION("swish") {
        auto m = Swish<16>({.normalize = true}) >> Swish<16>({.dropout = 0.2}) >> Linear<2>();
        m.initialize(X);
        const std::string d = check_plan(m, X, 32);
        CHECK(contains(d, "gemm 12->16 | bias, swish, layernorm"));
        CHECK(contains(d, "bias, swish, dropout(0.2)"));
    }
    SECTION("hardswish") {
        auto m = HardSwish<16>({.dropout = 0.3}) >> HardSwish<16>({.normalize = true}) >> Softmax<3>();
        m.initialize(X);
        const std::string d = check_plan(m, X, 33);
        CHECK(contains(d, "gemm 12->16 | bias, hardswish, dropout(0.3)"));
        CHECK(contains(d, "bias, hardswish, layernorm"));
    }
    SECTION("softmax with a temperature") {
        auto m = Relu<16>() >> Softmax<6>({.temperature = 2.0});
        m.initialize(X);
        for (Node* n : m.walk())
            if (n->name() == "softmax")
                for (float& w : n->get_param("W")) w = 0.01f * float(&w - n->get_param("W").data);
        check_plan(m, X, 7);
    }
    SECTION("softmax without normalised outputs predicts logits") {
        auto m = Relu<16>() >> Softmax<6>({.normalize_outputs = false});
        m.initialize(X);
        check_plan(m, X, 8);
    }
    SECTION("maxout") {
        auto m = Maxout<16, dyn, 3>({.dropout = 0.25, .normalize = true}) >> Maxout<8, dyn, 2>() >> Softmax<4>();
        m.initialize(X);
        const std::string d = check_plan(m, X, 9);
        CHECK(contains(d, "gemm 12->48 | bias, maxout(3 pieces)->16, layernorm, dropout(0.25)"));
    }
}

TEST_CASE("lower: runs of elementwise layers are one pass, dropouts included", "[lower]") {
    const Floats2d X = random_array(21, 10, 3);
    auto m = Linear<24>() >> sigmoid_activation() >> LayerNorm<>() >> Dropout(0.3) >> Dropout(0.1) >>
             LayerNorm<>() >> Relu<8>({.dropout = 0.5}) >> Dropout(0.2) >> Linear<3>();
    m.initialize(X);
    const std::string d = check_plan(m, X, 11);
    INFO(d);
    CHECK(contains(d, "stage 0: gemm 10->24 | bias, sigmoid, layernorm, dropout(0.3), dropout(0.1), layernorm"));
    CHECK(contains(d, "stage 1: gemm 24->8 | bias, relu, dropout(0.5), dropout(0.2)"));
    CHECK(contains(d, "stage 2: gemm 8->3 | bias"));
    CHECK(!contains(d, "stage 3"));

    SECTION("elementwise layers first") {
        auto m2 = Dropout(0.2) >> LayerNorm<10>() >> sigmoid_activation() >> Relu<4>();
        m2.initialize(X);
        CHECK(contains(check_plan(m2, X, 12), "stage 0: elementwise 10 | dropout(0.2), layernorm, sigmoid"));
    }
    SECTION("a dropout switched off") {
        auto m3 = Relu<16>({.dropout = 0.4}) >> Linear<2>();
        m3.initialize(X);
        m3.template layer<0>().for_each_child([](Node& n) {
            if (n.name() == "dropout") n.set_attr("is_enabled", false);
        });
        check_plan(m3, X, 13);
    }
}

TEST_CASE("lower: residual blocks add their input in the last stage's pass", "[lower]") {
    const Floats2d X = random_array(17, 20, 4);
    SECTION("in the middle") {
        auto m = Relu<32>({.normalize = true}) >> residual(Relu<32>({.dropout = 0.1}) >> Linear<32>()) >>
                 residual(LayerNorm<32>()) >> Softmax<5>();
        m.initialize(X);
        const std::string d = check_plan(m, X, 21);
        INFO(d);
        CHECK(contains(d, "stage 2: gemm 32->32 | bias, residual add (x1)"));
        CHECK(contains(d, "stage 3: elementwise 32 | layernorm, residual add (x3)"));
    }
    SECTION("nested, first and last") {
        auto m = residual(residual(Mish<20>({.dropout = 0.2})) >> Relu<20>()) >> residual(Linear<20>());
        m.initialize(X);
        const std::string d = check_plan(m, X, 22);
        INFO(d);
        CHECK(contains(d, "stage 0: gemm 20->20 | bias, mish, dropout(0.2), residual add (x0)"));
    }
    SECTION("gelu, swish and hardswish in residual blocks") {
        auto m = residual(Gelu<20>({.dropout = 0.2})) >> residual(Swish<20>() >> HardSwish<20>({.normalize = true}));
        m.initialize(X);
        const std::string d = check_plan(m, X, 24);
        INFO(d);
        CHECK(contains(d, "stage 0: gemm 20->20 | bias, gelu, dropout(0.2), residual add (x0)"));
        CHECK(contains(d, "stage 2: gemm 20->20 | bias, hardswish, layernorm, residual add (x1)"));
    }
    SECTION("one residual of one layer") {
        auto m = residual(Relu<20>({.dropout = 0.3}));
        m.initialize(X);
        check_plan(m, X, 23);
    }
}

TEST_CASE("lower: layers it does not fuse become layer stages; concatenate's branches are stages", "[lower]") {
    SECTION("a HashEmbed first") {
        auto m = HashEmbed<16>(500) >> Relu<24>({.dropout = 0.2}) >> Softmax<4>();
        Ints2d ids({13, 1}, uninitialized);
        for (std::size_t i = 0; i < 13; ++i) ids[i] = static_cast<std::int32_t>(i * 7 + 3);
        m.initialize(ids);
        const std::string d = check_plan(m, ids, 31, false);
        INFO(d);
        CHECK(contains(d, "stage 0: layer hashembed->16"));
        CHECK(contains(d, "stage 1: gemm 16->24 | bias, relu, dropout(0.2)"));
    }
    SECTION("a concatenate in the middle, with elementwise layers after it") {
        const Floats2d X = random_array(11, 9, 5);
        auto m = Relu<12>() >> (Relu<8>() | Linear<4>()) >> LayerNorm<>() >> Dropout(0.2) >> Softmax<3>();
        m.initialize(X);
        const std::string d = check_plan(m, X, 32);
        INFO(d);
        CHECK(contains(d, "stage 1: gemm 12->8 | bias, relu   [x1 -> x2]"));
        CHECK(contains(d, "stage 2: gemm 12->4 | bias   [x1 -> x3]"));
        CHECK(contains(d, "stage 3: concat 8+4->12 | layernorm, dropout(0.2)   [x2,x3 -> x4]"));
    }
    SECTION("a concatenate with a noop branch, twice the same branch, and a clone") {
        const Floats2d X = random_array(11, 6, 7);
        auto m = (noop() | Relu<5>() | noop()) >> clone(Relu<17>({.normalize = true}), 2) >> Softmax<3>();
        m.initialize(X);
        const std::string d = check_plan(m, X, 34);
        INFO(d);
        CHECK(contains(d, "concat 6+5+6->17   [x0,x1,x0 -> x2]"));
        CHECK(contains(d, "stage 2: gemm 17->17 | bias, relu, layernorm"));
        CHECK(contains(d, "stage 3: gemm 17->17 | bias, relu, layernorm"));
    }
    SECTION("add: the branches' stages, then one stage that sums them (noop's branch reads the boundary)") {
        const Floats2d X = random_array(11, 8, 8);
        auto m = Relu<8>() >> add(Relu<8>({.dropout = 0.2}), noop(), Maxout<8>({.nP = 2}) >> LayerNorm<>()) >>
                 Dropout(0.2) >> Softmax<3>();
        m.initialize(X);
        const std::string d = check_plan(m, X, 35);
        INFO(d);
        CHECK(contains(d, "stage 3: add 8+8+8->8 | dropout(0.2)   [x2,x1,x3 -> x4]"));
        CHECK(!contains(d, "layer "));
        // a + b, first, in a residual: the sum and the skip's add in one stage
        auto r = residual(Relu<8>() + Gelu<8>()) >> Softmax<3>();
        r.initialize(X);
        const std::string e = check_plan(r, X, 36);
        INFO(e);
        CHECK(contains(e, "stage 2: add 8+8->8 | residual add (x0)   [x1,x2 -> x3]"));
    }
    SECTION("a concatenate first, in a residual") {
        const Floats2d X = random_array(11, 12, 6);
        auto m = residual(Relu<8>() | Linear<4>()) >> Softmax<3>();
        m.initialize(X);
        const std::string d = check_plan(m, X, 33);
        INFO(d);
        CHECK(contains(d, "stage 2: concat 8+4->12 | residual add (x0)   [x1,x2 -> x3]"));
    }
}

TEST_CASE("lower: predict is const and thread-safe", "[lower][threads]") {
    auto model = Relu<32>({.dropout = 0.2}) >> Softmax<4>();
    const Floats2d X = random_array(40, 16, 6);
    model.initialize(X);
    const auto plan = lower(model);
    const Floats2d want = model.predict(X);
    std::vector<std::thread> ts;
    std::atomic<int> bad{0};
    for (int t = 0; t < 4; ++t)
        ts.emplace_back([&] {
            for (int i = 0; i < 50; ++i) {
                const Floats2d P = plan.predict(X);
                for (std::size_t k = 0; k < P.size(); ++k)
                    if (P[k] != want[k]) ++bad;
            }
        });
    for (auto& t : ts) t.join();
    CHECK(bad == 0);
}

TEST_CASE("lower: errors", "[lower]") {
    auto model = Relu<8>() >> Softmax<2>();
    CHECK_THROWS_WITH(lower(model), Catch::Contains("not initialised"));
    model.initialize(random_array(4, 6, 1));
    auto plan = lower(model);
    CHECK_THROWS_WITH(plan.predict(random_array(4, 5, 1)), Catch::Contains("expected input width 6"));
    const Floats2d X = random_array(4, 6, 1);
    auto [Y, bp] = plan.begin_update(X);
    CHECK_THROWS_WITH(bp(random_array(3, 2, 1)), Catch::Contains("expected a gradient of shape (4, 2)"));
}
