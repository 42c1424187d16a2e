// The engine (include/tenon/lower/engine.hpp): a model's own predict / begin_update run
// through its plan. Results equal the layers' own (unfused(model)), the plan follows the
// model through re-initialisation, a held plan refuses a model that changed (tenon-E172), and
// the caller may free X before calling backprop.
#include <catch2/catch.hpp>

#include <atomic>
#include <cmath>
#include <optional>
#include <thread>
#include <vector>

#include "tenon/tenon.hpp"
#include "unit/helpers.hpp"

using namespace tenon;
using Catch::Matchers::Contains;
using testing::all_params;
using testing::random_array;
using testing::same;

namespace {

// Trains a (through its plan) and b (its layers alone) side by side from the same weights and
// seeds; every step's output, dX and the weights after the update must agree bit for bit.
template <class M>
void train_side_by_side(M& a, const Floats2d& X, std::size_t nO, int steps) {
    M b = a;
    Optimizer oa = Adam(0.01), ob = Adam(0.01);
    for (int step = 0; step < steps; ++step) {
        const Floats2d dY = random_array(X.shape(0), nO, 300 + step);
        fix_random_seed(70 + step);
        auto [Ya, bpa] = a.begin_update(X);
        const Floats2d dXa = bpa(dY);
        REQUIRE(a.uses_plan());
        Floats2d Yb, dXb;
        {
            fix_random_seed(70 + step);
            auto [y, bpb] = unfused(b).begin_update(X);
            dXb = bpb(dY);
            Yb = std::move(y);
            REQUIRE(!b.uses_plan());
        }
        CHECK(same(Ya, Yb));
        CHECK(same(dXa, dXb));
        a.finish_update(oa);
        b.finish_update(ob);
        CHECK(all_params(a) == all_params(b));
    }
}

}  // namespace

TEST_CASE("engine: predict and training run through the plan and equal the layers", "[engine]") {
    SECTION("an MLP with dropout, LayerNorm and a residual Maxout block") {
        auto model = Relu<48>({.dropout = 0.1, .normalize = true}) >>
                     residual(Maxout<48, 48, 3>({.normalize = true})) >> Softmax<7>();
        const Floats2d X = random_array(33, 20, 1);
        model.initialize(X);
        const Floats2d P = model.predict(X);
        CHECK(model.uses_plan());
        const Floats2d Q = unfused(model).predict(X);
        CHECK(same(P, Q));
        train_side_by_side(model, X, 7, 4);
    }
    SECTION("an embedding head before dense layers") {
        auto model = HashEmbed<16>(100, {.seed = 3}) >> Relu<12>() >> Softmax<5>();
        Ints2d ids({9, 1});
        for (std::size_t i = 0; i < 9; ++i) ids[i] = static_cast<int>(i * 7919 % 1000);
        model.initialize(ids);
        const Floats2d P = model.predict(ids);
        CHECK(model.uses_plan());
        CHECK(same(P, unfused(model).predict(ids)));
    }
}

TEST_CASE("engine: the caller may free X before calling backprop", "[engine]") {
    auto model = Relu<16>() >> Softmax<4>();
    const Floats2d X = random_array(10, 8, 2);
    model.initialize(X);
    auto b = model;  // the same weights, zero gradients
    const Floats2d dY = random_array(10, 4, 3);
    auto [Y, backprop] = model.begin_update(Floats2d(X));  // the copy is freed at the semicolon
    const Floats2d scribble = random_array(10, 8, 4);      // likely takes the freed block
    const Floats2d dX = backprop(dY);
    CHECK(model.uses_plan());
    auto [Yb, bpb] = unfused(b).begin_update(X);
    CHECK(same(bpb(dY), dX));
    CHECK(all_params(b, true) == all_params(model, true));
    CHECK(scribble.size() == 80);
}

TEST_CASE("engine: params_only gives backprop's gradients without dX", "[engine]") {
    auto a = Relu<16>({.dropout = 0.25}) >> Maxout<8, 16, 2>({.normalize = true}) >> Softmax<4>();
    const Floats2d X = random_array(12, 6, 21);
    a.initialize(X);
    auto b = a;
    const Floats2d dY = random_array(12, 4, 22);
    fix_random_seed(5);
    auto [Ya, bpa] = a.begin_update(X);
    bpa(dY);
    fix_random_seed(5);
    auto [Yb, bpb] = b.begin_update(X);
    bpb.params_only(dY);
    CHECK(b.uses_plan());
    CHECK(all_params(a, true) == all_params(b, true));
    // The layers' path too (it makes dX and drops it).
    auto c = Relu<16>() >> Softmax<4>();
    c.initialize(X);
    auto [Yc, bpc] = unfused(c).begin_update(X);
    bpc.params_only(random_array(12, 4, 23));
    CHECK(!c.uses_plan());
    CHECK(testing::nonzero(c.walk()[2]->get_grad("W")));  // softmax (its W starts at zero: relu gets no gradient)
}

TEST_CASE("engine: the plan follows the model through re-initialisation", "[engine]") {
    auto model = Linear<12>() >> Relu<10>() >> Softmax<>();
    const Floats2d X = random_array(6, 10, 5);
    model.initialize(X, random_array(6, 3, 6));
    auto held = lower(model);
    CHECK(model.predict(X).shape(1) == 3);
    CHECK(model.uses_plan());
    // Other widths: the model's own calls make a new plan; the held one refuses (never reads
    // the new, larger W with the old widths).
    for (Node* n : model.walk())
        if (n->has_dim("nO") && n->name() == "softmax") n->set_dim("nO", 9, true);
    for (Node* n : model.walk())
        if (n->has_dim("nI") && n->name() == "softmax") n->set_dim("nI", n->get_dim("nI"), true);
    const Floats2d X2 = random_array(6, 10, 7);
    model.initialize(X2, random_array(6, 9, 8));
    const Floats2d P = model.predict(X2);
    CHECK(P.shape(1) == 9);
    CHECK(model.uses_plan());
    CHECK(same(P, unfused(model).predict(X2)));
    CHECK_THROWS_WITH(held.predict(X2), Contains("tenon-E172") && Contains("lower(model) again"));
    CHECK_THROWS_WITH(held.begin_update(X2), Contains("tenon-E172"));
    // A backprop made before the change refuses too.
    auto plan = lower(model);
    auto [Y, bp] = plan.begin_update(X2);
    model.initialize(X2, random_array(6, 9, 8));  // same widths: the plan is still good
    CHECK_NOTHROW(bp(random_array(6, 9, 9)));
    for (Node* n : model.walk())
        if (n->name() == "softmax") n->set_dim("nO", 4, true);
    CHECK_THROWS_WITH(bp(random_array(6, 9, 9)), Contains("tenon-E172"));
}

TEST_CASE("engine: a backprop whose model's memory now holds another model refuses", "[engine]") {
    // Erasing the first of a vector of models move-assigns the second into its place: the
    // backprop taken from the first must not run with the second's weights.
    using M = decltype(Relu<6, 5>() >> Softmax<3>());
    std::vector<M> models;
    for (int i = 0; i < 3; ++i) {
        models.push_back(Relu<6, 5>() >> Softmax<3>());
        models.back().initialize();
    }
    const Floats2d X = random_array(4, 5, 21);
    auto [Y, bp] = models[0].begin_update(X);
    REQUIRE(models[0].uses_plan());
    models.erase(models.begin());
    // (The model's life, which the backprop watches, says so first: tests/unit/test_backprop_life.cpp;
    // a plan held from lower() and its backprops check the layout and say "another node of the same shape".)
    CHECK_THROWS_WITH(bp(random_array(4, 3, 22)), Contains("tenon-E172") && Contains("assigned"));
    CHECK(models[0].predict(X).shape(1) == 3);
}

TEST_CASE("engine: a backprop called after its model is gone refuses", "[engine]") {
    const Floats2d X = random_array(4, 5, 23);
    {
        std::optional<decltype(Relu<6, 5>() >> Softmax<3>())> model;
        model.emplace(Relu<6, 5>() >> Softmax<3>());
        model->initialize();
        auto [Y, bp] = model->begin_update(X);
        REQUIRE(model->uses_plan());
        CHECK_NOTHROW(bp(Y));
        model.reset();
        CHECK_THROWS_WITH(bp(Y), Contains("tenon-E172") && Contains("no longer exists"));
    }
    {
        AnyModel<Floats2d, Floats2d> any = Relu<6, 5>() >> Softmax<3>();
        any.initialize();
        auto [Y, bp] = any.begin_update(X);
        AnyModel<Floats2d, Floats2d> other = Relu<7, 5>() >> Softmax<3>();
        other.initialize();
        any = std::move(other);
        CHECK_THROWS_WITH(bp(Y), Contains("tenon-E172") && Contains("no longer exists"));
        auto [Y2, bp2] = any.begin_update(X);
        CHECK_NOTHROW(bp2(Y2));
    }
}

TEST_CASE("engine: a loaded file replaces the plan's parameters", "[engine]") {
    auto a = Relu<12>() >> Relu<3>();  // (Softmax starts at zero weights: every output would be 1/3)
    const Floats2d X = random_array(5, 6, 10);
    fix_random_seed(1);
    a.initialize(X);
    auto b = Relu<12>() >> Relu<3>();
    fix_random_seed(2);
    b.initialize(X);
    const Floats2d before = b.predict(X);
    CHECK(b.uses_plan());
    b.from_bytes(a.to_bytes());
    CHECK(same(b.predict(X), a.predict(X)));
    CHECK(!same(b.predict(X), before));
}

TEST_CASE("engine: predict from many threads gives the same bits", "[engine][threads]") {
    auto model = Relu<32>({.dropout = 0.2, .normalize = true}) >> Softmax<4>();
    const Floats2d X = random_array(40, 16, 11);
    model.initialize(X);
    const Floats2d want = unfused(model).predict(X);
    std::atomic<int> bad{0};
    std::vector<std::thread> ts;
    for (int t = 0; t < 4; ++t)
        ts.emplace_back([&] {
            for (int i = 0; i < 100; ++i)
                if (!same(model.predict(X), want)) ++bad;
        });
    for (auto& t : ts) t.join();
    CHECK(bad == 0);
    CHECK(model.uses_plan());
}

TEST_CASE("engine: models the plan does not run keep their layers' path", "[engine]") {
    // Nothing to fuse: no plan is made.
    auto emb = HashEmbed<8>(50, {.seed = 1}) >> Dropout(0.0);
    Ints2d ids({4, 1});
    for (std::size_t i = 0; i < 4; ++i) ids[i] = static_cast<int>(i + 1);
    emb.initialize(ids);
    CHECK(emb.predict(ids).shape() == std::array<std::size_t, 2>{4, 8});
    // Another input width than the model's: the layers' own error (tenon-E101, the layer named).
    auto model = Relu<8, 6>() >> Softmax<3>();
    model.initialize();
    CHECK_THROWS_WITH(model.predict(random_array(2, 5, 1)), Contains("tenon-E101") && Contains("relu"));
}

// Models whose types tell that the plan places every layer run only their plan: their layers'
// training path is not compiled (lowering::plan_only); the calls the plan does not take
// still behave as the layers' did.
namespace {
using Mlp = decltype(Relu<12>({.dropout = 0.5}) >> Relu<3>());
using Tagger = decltype(list2ragged<Ints2d>() >> with_array<BasicRagged<Ints2d>>(HashEmbed<8>(100, 1u, 0, 0.0)) >>
                        ragged2list() >> with_array<List<Floats2d>>(clone(residual(expand_window<1>() >> Maxout<8>()), 2), 1) >>
                        with_array<List<Floats2d>>(Softmax<4>()));
static_assert(lowering::plan_only<Mlp>::value && lowering::plan_only<Tagger>::value);
// A first row op (the walk opens no stage for it), a sequence plan over floats (its width is
// the model's nI, a value): not known from the types, so the layers' path stays.
static_assert(!lowering::plan_only<decltype(Dropout() >> Relu<4>())>::value);
static_assert(!lowering::plan_only<decltype(list2ragged<Floats2d>() >> with_array<Ragged>(Relu<4>()) >> ragged2list())>::value);
}  // namespace

TEST_CASE("engine: a model that runs only its plan, on what the plan does not take", "[engine]") {
    auto model = Relu<12>({.dropout = 0.5}) >> Relu<3>();  // (a Softmax's W starts at zero)
    model.initialize(random_array(4, 6, 1));
    // No rows: the output of no rows, a backprop that gives dX of no rows and adds nothing.
    auto [Y, bp] = model.begin_update(Floats2d({0, 6}));
    CHECK(Y.shape() == std::array<std::size_t, 2>{0, 3});
    const Floats2d dX = bp(Floats2d({0, 3}));
    CHECK(dX.shape() == std::array<std::size_t, 2>{0, 6});
    for (const auto& g : all_params(model, true))
        for (float v : g) CHECK(v == 0.0f);
    // Another width: the layers' error, the layer named.
    CHECK_THROWS_WITH(model.begin_update(random_array(2, 5, 1)), Contains("tenon-E101") && Contains("relu"));
    // model(X, false): the plan's training pass without dropout, as the layers' is_train=false.
    const Floats2d X = random_array(8, 6, 2);
    const auto near = [](const Floats2d& a, const Floats2d& b) {
        if (a.shape() != b.shape()) return false;
        for (std::size_t i = 0; i < a.size(); ++i)
            if (!(std::abs(a.data()[i] - b.data()[i]) <= 1e-6f)) return false;
        return true;
    };
    auto [Yt, bpt] = model(X, false);
    CHECK(near(Yt, model.predict(X)));  // (dropout 0.5 drawn: far from it)
    auto [Yu, bpu] = unfused(model)(X, false);
    CHECK(near(Yt, Yu));
    const Floats2d dY = random_array(8, 3, 3);
    CHECK(near(bpt(dY), bpu(dY)));
    auto [Yd, bpd] = model(X, true);  // (and training still drops)
    CHECK(!near(Yd, Yt));
    // Sequences: an empty batch and documents of no words train to nothing.
    auto tagger = Tagger(list2ragged<Ints2d>() >> with_array<BasicRagged<Ints2d>>(HashEmbed<8>(100, 1u, 0, 0.0)) >>
                         ragged2list() >> with_array<List<Floats2d>>(clone(residual(expand_window<1>() >> Maxout<8>()), 2), 1) >>
                         with_array<List<Floats2d>>(Softmax<4>()));
    tagger.initialize(List<Ints2d>{Ints2d({3, 1})});
    auto [Ye, bpe] = tagger.begin_update(List<Ints2d>{});
    CHECK(Ye.size() == 0);
    CHECK(bpe(List<Floats2d>{}).size() == 0);
    auto [Yz, bpz] = tagger.begin_update(List<Ints2d>{Ints2d({0, 1}), Ints2d({0, 1})});
    REQUIRE(Yz.size() == 2);
    CHECK(Yz[1].shape() == std::array<std::size_t, 2>{0, 4});
    CHECK(bpz(List<Floats2d>{Floats2d({0, 4}), Floats2d({0, 4})}).size() == 2);
    // Ids of other columns: the table's error.
    CHECK_THROWS_WITH(tagger.begin_update(List<Ints2d>{Ints2d({2, 1}), Ints2d({2, 3})}), Contains("tenon-E"));
}

// A batch of no sequences trains to nothing for the models that keep their layers' path too:
// the layers after list2ragged could not say the width of an empty List (tenon-E260 before).
TEST_CASE("engine: training on a batch of no sequences, a model with its layers' path", "[engine]") {
    using Classifier = decltype(with_array<List<Floats2d>>(Relu<8>()) >> list2ragged() >> reduce_mean() >> Softmax<3>());
    static_assert(!lowering::plan_only<Classifier>::value);
    Classifier model = with_array<List<Floats2d>>(Relu<8>()) >> list2ragged() >> reduce_mean() >> Softmax<3>();
    model.initialize(List<Floats2d>{random_array(4, 5, 1), random_array(2, 5, 2)});
    Optimizer opt = Adam(0.001);
    for (bool is_train : {true, false}) {
        auto [Y, bp] = model(List<Floats2d>{}, is_train);
        CHECK(Y.shape() == std::array<std::size_t, 2>{0, 3});
        CHECK(bp(Floats2d({0, 3})).size() == 0);
        for (const auto& g : all_params(model, true))
            for (float v : g) CHECK(v == 0.0f);
        model.finish_update(opt);
    }
    // The same model goes on training on documents.
    const List<Floats2d> docs{random_array(3, 5, 3)};
    auto [Y, bp] = model.begin_update(docs);
    CHECK(bp(random_array(1, 3, 4)).size() == 1);
    // The ragged form, no sequences in a Ragged.
    auto pooled = list2ragged() >> reduce_mean() >> Softmax<3>();
    pooled.initialize(List<Floats2d>{random_array(2, 5, 1)});
    auto [Yp, bpp] = pooled.begin_update(List<Floats2d>{});
    CHECK(Yp.shape() == std::array<std::size_t, 2>{0, 3});
    CHECK(bpp(Floats2d({0, 3})).size() == 0);
    // A gradient not shaped like the empty output: tenon-E111, as a layer's backprop says.
    CHECK_THROWS_WITH(bpp(Floats2d({2, 3})), Contains("tenon-E111") && Contains("0 rows of width 3") &&
                                                 Contains("found 2 rows of width 3"));
    CHECK_THROWS_WITH(bpp(Floats2d({0, 7})), Contains("tenon-E111") && Contains("found 0 rows of width 7"));
    auto [Yt, bpt] = model(List<Floats2d>{}, true);
    CHECK_THROWS_WITH(bpt(Floats2d({1, 3})), Contains("tenon-E111"));
    // A tagger's output of no sequences takes a List of none, not of one.
    auto tagger = with_array<List<Floats2d>>(Relu<8>()) >> with_array<List<Floats2d>>(Softmax<3>());
    tagger.initialize(List<Floats2d>{random_array(4, 5, 1)});
    auto [Yg, bpg] = tagger(List<Floats2d>{}, true);
    CHECK(Yg.size() == 0);
    CHECK(bpg(List<Floats2d>{}).size() == 0);
    CHECK_THROWS_WITH(bpg(List<Floats2d>{Floats2d({0, 3})}), Contains("tenon-E111") && Contains("0 sequences"));
}
