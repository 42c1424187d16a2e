// AnyModel<In, Out> (issue 18, item 1): a model whose type is chosen at run time. It must
// give what the model it holds gives, bit for bit (outputs, input gradients, parameter
// gradients, Adam steps), show that model's tree, copy deeply, save and load, work as a
// child of the combinators (through the plan of a chain around it), hold sequence models,
// and let errors through with their ids and node paths.
#include <catch2/catch.hpp>

#include <cmath>
#include <set>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "tenon/io/state.hpp"
#include "tenon/tenon.hpp"
#include "unit/helpers.hpp"
#include "support/error_id.hpp"

using namespace tenon;
using Catch::Matchers::Contains;

namespace {
using testing::all_grads;
using testing::all_params;
using testing::random_array;
using testing::same;
using Any2d = AnyModel<Floats2d, Floats2d>;
using AnyList = AnyModel<List<Floats2d>, List<Floats2d>>;

auto mlp() { return Relu<16>({.dropout = 0.2}) >> Relu<16>() >> Softmax<5>(); }
using Mlp = decltype(mlp());

// A function whose result type does not say which model it made.
Any2d make_head(bool wide) {
    if (wide) return Relu<32>() >> Softmax<5>();
    return Softmax<5>();
}

using tenon::test::error_id;
template <class F>
Error error_of(F&& f) {
    try {
        f();
    } catch (const Error& e) {
        return e;
    }
    FAIL("no error");
    return Error("");
}

Floats2d one_hot(std::size_t rows, std::size_t n, std::size_t seed) {
    Floats2d Y({rows, n});
    for (std::size_t i = 0; i < rows; ++i) Y(i, (i * 7 + seed) % n) = 1.0f;
    return Y;
}

bool same_list(const List<Floats2d>& a, const List<Floats2d>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (!same(a[i], b[i])) return false;
    return true;
}
}  // namespace

// What the types say (the rest of the checks are at run time).
static_assert(Model<Any2d> && Model<AnyList>);
static_assert(Any2d::static_nI == dyn && Any2d::static_nO == dyn);
static_assert(std::is_convertible_v<Mlp, Any2d> && std::is_convertible_v<const Mlp&, Any2d>);
static_assert(!std::is_constructible_v<Any2d, double> && !std::is_convertible_v<int, Any2d>);
static_assert(std::is_copy_constructible_v<Any2d> && std::is_nothrow_move_constructible_v<Any2d>);
static_assert(std::is_same_v<decltype(AnyModel{Relu<4>()}), Any2d>);
static_assert(std::is_same_v<decltype(AnyModel{std::declval<Any2d&>()}), Any2d>);  // a copy, not one in another
static_assert(std::is_same_v<decltype(Any2d(Relu<4>()) >> Softmax<3>()), Chain<Any2d, Softmax<3>>>);

TEST_CASE("any_model: holds any model of its signature, whose tree it shows", "[any_model]") {
    Any2d a = mlp();
    CHECK(a.name() == "any(relu>>relu>>softmax)");
    CHECK(a.target<Mlp>() != nullptr);
    CHECK(a.target<Relu<16>>() == nullptr);
    CHECK(&a.model() == a.target<Mlp>());
    const auto nodes = a.walk();
    Mlp plain = mlp();
    REQUIRE(nodes.size() == plain.walk().size() + 1);
    CHECK(nodes[1] == &a.model());
    for (std::size_t i = 1; i < nodes.size(); ++i) CHECK(nodes[i]->name() == plain.walk()[i - 1]->name());
    // The widths are the held model's (dyn in the type, so no "(static)").
    CHECK(a.get_dim("nO") == 5);
    CHECK(!a.has_dim("nI"));
    CHECK(!a.is_initialized());
    const std::string text = a.describe();
    CHECK_THAT(text, Catch::StartsWith("any(relu>>relu>>softmax) nO=5 nI=? [not initialized]\n"
                                       "  relu>>relu>>softmax nO=5(static) nI=? [not initialized]\n"));
    CHECK_THAT(text, Contains("\n      dropout"));

    // Chosen at run time: one type, two trees.
    Any2d wide = make_head(true), narrow = make_head(false);
    CHECK(wide.walk().size() == 4);
    CHECK(narrow.walk().size() == 2);
    const Floats2d X = random_array(3, 7, 1);
    wide.initialize(X);
    narrow.initialize(X);
    CHECK(wide.predict(X).shape(1) == 5);
    CHECK(narrow.predict(X).shape(1) == 5);
    CHECK(narrow.get_dim("nI") == 7);
    // Assigning another model replaces the tree.
    narrow = Relu<8>() >> Softmax<5>();
    CHECK(narrow.walk().size() == 4);
    CHECK(!narrow.is_initialized());
}

TEST_CASE("any_model: outputs, gradients and Adam steps equal the held model's, bit for bit", "[any_model]") {
    const Floats2d X = random_array(9, 12, 1);
    Mlp st = mlp();
    st.initialize(X);
    Any2d any = copy(st);  // the same weights
    REQUIRE(any.is_initialized());
    REQUIRE(all_params(any) == all_params(st));
    for (std::size_t rows : {1u, 9u, 128u}) {
        const Floats2d Xb = random_array(rows, 12, 10 + rows);
        CHECK(same(any.predict(Xb), st.predict(Xb)));
    }
    // The held chain ran its plan, as when it is called itself.
    CHECK(any.target<Mlp>()->uses_plan());

    Optimizer oa = Adam(0.01), ob = Adam(0.01);
    for (int step = 0; step < 4; ++step) {
        const Floats2d dY = random_array(9, 5, 100 + step);
        fix_random_seed(7 + step);  // the same dropout masks
        auto [Ya, bpa] = st.begin_update(X);
        const Floats2d dXa = bpa(dY);
        fix_random_seed(7 + step);
        auto [Yb, bpb] = any.begin_update(X);
        const Floats2d dXb = bpb(dY);
        CHECK(same(Ya, Yb));
        CHECK(same(dXa, dXb));
        CHECK(all_grads(st) == all_grads(any));
        st.finish_update(oa);
        any.finish_update(ob);
        CHECK(all_params(st) == all_params(any));
    }
    // model(X, is_train), params_only, and the layers alone (plans off).
    {
        auto [Ya, bpa] = st(X, false);
        auto [Yb, bpb] = any(X, false);
        CHECK(same(Ya, Yb));
        const Floats2d dY = random_array(9, 5, 3);
        fix_random_seed(3);
        auto [Yc, bpc] = st.begin_update(X);
        bpc.params_only(dY);
        fix_random_seed(3);
        auto [Yd, bpd] = any.begin_update(X);
        bpd.params_only(dY);
        CHECK(all_grads(st) == all_grads(any));
    }
    CHECK(same(unfused(any).predict(X), unfused(st).predict(X)));
    CHECK(any.get_gradients().size() == st.get_gradients().size());
}

TEST_CASE("any_model: initialize with and without samples, widths given from around it", "[any_model]") {
    // Widths from the types.
    Any2d a = Relu<8, 4>() >> Softmax<3>();
    a.initialize();
    CHECK(a.is_initialized());
    CHECK(a.get_dim("nI") == 4);
    CHECK(a.get_dim("nO") == 3);
    // From samples.
    Any2d b = Relu<8>() >> Softmax<>();
    b.initialize(random_array(5, 6, 1), one_hot(5, 4, 0));
    CHECK(b.get_dim("nI") == 6);
    CHECK(b.get_dim("nO") == 4);
    CHECK(error_id([&] { b.initialize(random_array(5, 6, 1), one_hot(4, 4, 0)); }) == "tenon-E115");
    // A width set on the AnyModel reaches the held model at initialize.
    Any2d c = Relu<8>();
    c.set_dim("nI", 6);
    CHECK(c.get_dim("nI") == 6);
    CHECK(!c.model().has_dim("nI"));
    c.initialize();
    CHECK(c.model().get_dim("nI") == 6);
    CHECK(c.predict(random_array(2, 6, 1)).shape(1) == 8);
    // One that contradicts the held model's own.
    Any2d d = Relu<8, 4>();
    CHECK(error_id([&] { d.set_dim("nI", 6); }) == "tenon-E101");
    // Made from an initialised model: initialised.
    auto trained = Relu<8, 4>();
    trained.initialize();
    Any2d e = trained;
    CHECK(e.is_initialized());
    CHECK(e.predict(random_array(2, 4, 1)).shape(1) == 8);
    // A file loaded into the held model (any.model()) initialises the AnyModel too.
    Any2d f = Relu<8, 4>();
    CHECK(!f.is_initialized());
    CHECK(error_id([&] { (void)f.predict(random_array(2, 4, 1)); }) == "tenon-E110");
    f.model().from_bytes(trained.to_bytes());
    CHECK(f.is_initialized());
    CHECK(f.describe().find("not initialized") == std::string::npos);
    CHECK(same(f.predict(random_array(2, 4, 1)), trained.predict(random_array(2, 4, 1))));
}

TEST_CASE("any_model: in a chain with a static Softmax, through the chain's plan; widths checked at initialize",
          "[any_model]") {
    const Floats2d X = random_array(24, 12, 1);
    const Floats2d Y = one_hot(24, 4, 1);
    // The same layers, one model flat and one with the first two behind an AnyModel.
    auto flat = Relu<16>() >> Relu<16>() >> Softmax<4>();
    flat.initialize(X, Y);
    auto model = Any2d(flat.layer<0>() >> flat.layer<1>()) >> flat.layer<2>();
    REQUIRE(model.is_initialized());
    CHECK(model.get_dim("nI") == 12);
    CHECK(model.layer<0>().get_dim("nO") == 16);
    CHECK(model.name() == "any(relu>>relu)>>softmax");
    CHECK(same(model.predict(X), flat.predict(X)));
    CHECK(model.uses_plan());
    CHECK(same(unfused(model).predict(X), unfused(flat).predict(X)));
    Optimizer oa = Adam(0.01), ob = Adam(0.01);
    const CategoricalCrossentropy loss;
    double first = 0, last = 0;
    for (int step = 0; step < 30; ++step) {
        auto [Ya, bpa] = flat.begin_update(X);
        bpa(loss.get_grad(Ya, Y));
        flat.finish_update(oa);
        auto [Yb, bpb] = model.begin_update(X);
        CHECK(model.uses_plan());
        const Floats2d dXb = bpb(loss.get_grad(Yb, Y));
        CHECK(dXb.shape(1) == 12);
        model.finish_update(ob);
        CHECK(same(Ya, Yb));
        (step == 0 ? first : last) = loss.get_loss(Yb, Y);
    }
    CHECK(last < first);
    CHECK(all_params(model.layer<0>().model()).size() == 4);
    CHECK(same(model.predict(X), flat.predict(X)));

    // Widths that the types leave dyn disagree: found at initialize (the run-time E001).
    auto bad = Any2d(Relu<16>()) >> Softmax<4, 8>();
    CHECK(error_id([&] { bad.initialize(X); }) == "tenon-E101");
    // A width from the layer before reaches the AnyModel without a sample.
    auto after = Relu<8, 4>() >> Any2d(Softmax<3>());
    after.initialize();
    CHECK(after.layer<1>().get_dim("nI") == 8);
    CHECK(after.layer<1>().model().get_dim("nI") == 8);
    CHECK(after.predict(random_array(2, 4, 1)).shape(1) == 3);
}

TEST_CASE("any_model: a child of residual and clone", "[any_model]") {
    const Floats2d X = random_array(16, 6, 2);
    const Floats2d Y = one_hot(16, 3, 2);
    auto model = Relu<8>() >> clone(residual(Any2d(Relu<8>() >> LayerNorm<>())), 2) >> Softmax<3>();
    model.initialize(X, Y);
    CHECK(model.layer<1>()[1].layer().model().get_dim("nI") == 8);
    Floats2d P = model.predict(X);
    CHECK(model.uses_plan());
    CHECK(same(unfused(model).predict(X), P));
    Optimizer opt = Adam(0.01);
    const CategoricalCrossentropy loss;
    double first = 0, last = 0;
    for (int step = 0; step < 30; ++step) {
        auto [Yh, bp] = model.begin_update(X);
        bp(loss.get_grad(Yh, Y));
        model.finish_update(opt);
        (step == 0 ? first : last) = loss.get_loss(Yh, Y);
    }
    CHECK(last < first);
}

TEST_CASE("any_model: a sequence model (List<Floats2d>)", "[any_model]") {
    List<Floats2d> Xs;
    Xs.push_back(random_array(3, 5, 1));
    Xs.push_back(random_array(2, 5, 2));
    auto st = with_array<List<Floats2d>>(Relu<8>());
    st.initialize(Xs);
    AnyList any = copy(st);
    CHECK(any.get_dim("nO") == 8);
    CHECK(same_list(any.predict(Xs), st.predict(Xs)));
    List<Floats2d> dYs;
    dYs.push_back(random_array(3, 8, 3));
    dYs.push_back(random_array(2, 8, 4));
    auto [Ya, bpa] = st.begin_update(Xs);
    auto [Yb, bpb] = any.begin_update(Xs);
    CHECK(same_list(Ya, Yb));
    CHECK(same_list(bpa(dYs), bpb(dYs)));
    CHECK(all_grads(st) == all_grads(any));

    // Chained with a static sequence layer, trained.
    auto model = AnyList(with_array<List<Floats2d>>(Relu<8>())) >> with_array<List<Floats2d>>(Softmax<3>());
    model.initialize(Xs);
    Optimizer opt = Adam(0.01);
    for (int step = 0; step < 3; ++step) {
        auto [Yh, bp] = model.begin_update(Xs);
        List<Floats2d> d;
        for (const auto& y : Yh) d.push_back(y);
        const List<Floats2d> dX = bp(d);
        CHECK(dX[1].shape(1) == 5);
        model.finish_update(opt);
    }
    CHECK(model.predict(Xs)[0].shape(1) == 3);
}

TEST_CASE("any_model: copy is deep; assignment; replace_node swaps in another model type", "[any_model]") {
    const Floats2d X = random_array(6, 12, 3);
    Any2d a = mlp();
    a.initialize(X);
    Any2d b = copy(a);
    const auto na = a.walk(), nb = b.walk();
    REQUIRE(na.size() == nb.size());
    std::set<std::uint64_t> ids;
    for (auto* n : na) ids.insert(n->id());
    for (std::size_t i = 0; i < na.size(); ++i) {
        CHECK(na[i] != nb[i]);
        CHECK(na[i]->name() == nb[i]->name());
        CHECK(!ids.count(nb[i]->id()));
    }
    CHECK(all_params(a) == all_params(b));
    const auto before = all_params(a);
    Optimizer opt = Adam(0.1);
    for (int i = 0; i < 2; ++i) {
        auto [Y, bp] = b.begin_update(X);
        bp(Y);
        b.finish_update(opt);
    }
    CHECK(all_params(a) == before);
    CHECK(all_params(b) != before);
    // Copy assignment: a deep copy too.
    Any2d c = Softmax<5>();
    c = a;
    CHECK(c.walk().size() == na.size());
    CHECK(c.target<Mlp>() != a.target<Mlp>());
    CHECK(all_params(c) == before);

    // In a typed tree, a slot holds one type: an AnyModel slot holds any model of its
    // signature, so replace_node can swap in another kind of model.
    auto model = Any2d(Relu<16>()) >> Softmax<5>();
    model.initialize(X);
    (void)model.predict(X);
    Any2d other = Relu<16>() >> LayerNorm<>();
    other.initialize(X);
    REQUIRE(model.replace_node(model.layer<0>(), other));
    CHECK(model.layer<0>().target<decltype(Relu<16>() >> LayerNorm<>())>() != nullptr);
    CHECK_THAT(model.describe(), Contains("layernorm"));
    CHECK(same(model.predict(X), model.layer<1>().predict(other.predict(X))));
}

TEST_CASE("any_model: files: an AnyModel's file is the held model's, which is the static model's", "[any_model]") {
    const Floats2d X = random_array(6, 12, 4);
    Mlp st = mlp();
    st.initialize(X);
    Any2d a = copy(st);
    // AnyModel to AnyModel of the same tree.
    const auto bytes = a.to_bytes();
    Any2d b = mlp();
    b.from_bytes(bytes);
    CHECK(b.is_initialized());
    CHECK(same(b.predict(X), a.predict(X)));
    // The held model's file is the static model's file, both ways.
    CHECK(a.model().to_bytes() == st.to_bytes());
    Mlp st2 = mlp();
    st2.from_bytes(a.model().to_bytes());
    CHECK(same(st2.predict(X), st.predict(X)));
    Mlp loaded = mlp();
    loaded.from_bytes(st.to_bytes());
    Any2d c = std::move(loaded);  // a loaded model, made an AnyModel: ready
    CHECK(same(c.predict(X), st.predict(X)));
    // A file records what a model computes, not how it is held (io/serialize.hpp): the AnyModel's
    // node is not in it, so its file is the static model's, byte for byte, and loads both ways
    // (the AnyModel is then initialised, as its held model).
    CHECK(bytes == st.to_bytes());
    Mlp m = mlp();
    m.from_bytes(bytes);
    CHECK(same(m.predict(X), st.predict(X)));
    Any2d m2 = mlp();
    m2.from_bytes(st.to_bytes());
    CHECK(m2.is_initialized());
    CHECK(same(m2.predict(X), st.predict(X)));
    // Nested: an AnyModel holding an AnyModel, in a chain (a chain in a chain is its layers).
    AnyModel<Floats2d, Floats2d> nested = Any2d(copy(st));
    auto in_chain = Relu<12>() >> Any2d(std::move(nested));
    auto flat = Relu<12>() >> mlp();
    in_chain.initialize(X);
    flat.from_bytes(in_chain.to_bytes());
    CHECK(same(flat.predict(X), in_chain.predict(X)));
    // Another model held: another architecture.
    Any2d other = Relu<16>() >> Softmax<5>();
    CHECK(error_id([&] { other.from_bytes(bytes); }) == "tenon-E204");
    CHECK_THAT(other.can_from_bytes(bytes), Contains("tenon-E204"));
    // In a chain, on disk, with an optimizer checkpoint.
    auto model = Any2d(mlp()) >> Softmax<3>();
    model.initialize(X);
    const std::string path = "/tmp/tenon_test_any_model.tenon";
    model.to_disk(path);
    auto fresh = Any2d(mlp()) >> Softmax<3>();
    fresh.from_disk(path);
    CHECK(same(fresh.predict(X), model.predict(X)));
    Optimizer opt = Adam(0.01);
    auto [Y, bp] = model.begin_update(X);
    bp(Y);
    model.finish_update(opt);
    Optimizer opt2 = Adam(0.01);
    checkpoint_from_bytes(fresh, opt2, checkpoint_to_bytes(model, opt));
    CHECK(all_params(fresh) == all_params(model));
}

TEST_CASE("any_model: errors keep their ids and name the node by its path", "[any_model]") {
    const Floats2d X = random_array(5, 3, 5);
    // Before initialize: the id of the static model's error.
    Any2d a = Relu<4>() >> Softmax<2>();
    auto st = Relu<4>() >> Softmax<2>();
    CHECK(error_id([&] { (void)st.predict(X); }) == "tenon-E110");
    CHECK(error_id([&] { (void)a.predict(X); }) == "tenon-E110");
    CHECK(error_id([&] { (void)a.begin_update(X); }) == "tenon-E110");
    CHECK_THAT(error_of([&] { (void)a.predict(X); }).what(), Contains("any(relu>>softmax)"));

    // An error of a layer in the held model: its path from the model called.
    a.initialize(X);
    st.initialize(X);
    const Floats2d wide = random_array(5, 4, 6);
    const Error es = error_of([&] { (void)st.predict(wide); });
    CHECK(es.node_path() == "chain>0>relu");
    const Error ea = error_of([&] { (void)a.predict(wide); });
    CHECK(ea.id() == es.id());
    CHECK(ea.node_path() == "any>chain>0>relu");
    CHECK_THAT(ea.what(), Catch::StartsWith("[tenon-E101] any>chain>0>relu: ") && Contains("expected width 3"));
    CHECK(error_of([&] { (void)a.begin_update(wide); }).node_path() == "any>chain>0>relu");
    // The same inside a chain whose plan runs it.
    auto outer = Any2d(Relu<4>() >> Softmax<2>()) >> Softmax<3>();
    outer.initialize(X);
    (void)outer.predict(X);
    REQUIRE(outer.uses_plan());
    const Error eo = error_of([&] { (void)outer.predict(wide); });
    CHECK(eo.node_path() == "chain>0>any>chain>0>relu");
    CHECK_THAT(eo.what(), Catch::StartsWith("[tenon-E101] chain>0>any>chain>0>relu: "));

    // NaN in the input: the model called names itself.
    Floats2d bad = X;
    bad(1, 1) = std::nanf("");
    const Error en = error_of([&] { (void)a.predict(bad); });
    CHECK(en.id() == "tenon-E252");
    CHECK_THAT(en.what(), Contains("any(relu>>softmax)"));

    // A moved-from AnyModel holds nothing: E118, as a moved-from chain.
    Any2d b = std::move(a);
    CHECK(b.predict(X).shape(1) == 2);
    CHECK(error_id([&] { (void)a.predict(X); }) == "tenon-E118");
    CHECK(error_id([&] { a.initialize(X); }) == "tenon-E118");
    CHECK(error_id([&] { (void)a.model(); }) == "tenon-E118");
    CHECK(a.walk().size() == 1);
    a = b;  // usable again
    CHECK(same(a.predict(X), b.predict(X)));
    // A default-constructed backprop has nothing to call.
    Any2d::Backprop empty;
    CHECK(error_id([&] { (void)empty(Floats2dCView(X)); }) == "tenon-E118");
}

TEST_CASE("any_model: predict from several threads at once", "[any_model]") {
    const Floats2d X = random_array(32, 12, 7);
    Any2d model = mlp();
    model.initialize(X);
    const Floats2d want = model.predict(X);
    std::vector<int> ok(4, 0);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&, t] {
            bool all = true;
            for (int i = 0; i < 50; ++i) all = all && same(model.predict(X), want);
            ok[static_cast<std::size_t>(t)] = all;
        });
    for (auto& th : threads) th.join();
    CHECK(ok == std::vector<int>(4, 1));
}
