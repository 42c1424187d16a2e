// The transfer layers (list2array, list2ragged, list2padded, ragged2list, padded2list) and
// the wrappers (with_array, with_array2d, with_padded, with_ragged, with_list, with_flatten):
// their signatures (static_asserts), Thinc's values on every input kind each takes
// (gen_thinc_transfers_seq.py), gradient checks, and edge cases (empty batches, zero-length
// sequences, broken layouts, wrong widths: clear errors).
#include <catch2/catch.hpp>

#include <tenon/combinators/chain.hpp>
#include <tenon/combinators/noop.hpp>
#include <tenon/layers/linear.hpp>
#include <tenon/layers/relu.hpp>
#include <tenon/transfers/list2array.hpp>
#include <tenon/transfers/list2padded.hpp>
#include <tenon/transfers/list2ragged.hpp>
#include <tenon/transfers/padded2list.hpp>
#include <tenon/transfers/ragged2list.hpp>
#include <tenon/transfers/with_array.hpp>
#include <tenon/transfers/with_array2d.hpp>
#include <tenon/transfers/with_flatten.hpp>
#include <tenon/transfers/with_list.hpp>
#include <tenon/transfers/with_padded.hpp>
#include <tenon/transfers/with_ragged.hpp>

#include "oracle/case.hpp"
#include "support/error_id.hpp"
#include "support/floats.hpp"
#include "support/gradcheck_any.hpp"
#include "unit/helpers.hpp"

using namespace tenon;
using namespace tenon::oracle;

// ---------------------------------------------------------------------------------------
// Signatures: the kind passes through, widths are given through.
// ---------------------------------------------------------------------------------------
namespace sig {
template <class M, class In, class Out>
constexpr bool is = std::is_same_v<typename M::In, In> && std::is_same_v<typename M::Out, Out>;
using L2 = List<Floats2d>;

static_assert(is<decltype(list2array()), L2, Floats2d>);
static_assert(is<decltype(list2ragged()), L2, Ragged>);
static_assert(is<decltype(list2ragged<Ints1d>()), List<Ints1d>, BasicRagged<Ints1d>>);
static_assert(is<decltype(list2padded()), L2, Padded>);
static_assert(is<decltype(ragged2list()), Ragged, L2>);
static_assert(is<decltype(ragged2list<Ints1d>()), BasicRagged<Ints1d>, List<Ints1d>>);
static_assert(is<decltype(padded2list()), Padded, L2>);
static_assert(is<decltype(list2array<Ints1d>()), List<Ints1d>, Ints1d>);

using R4 = Relu<4>;
static_assert(is<decltype(with_array<Floats2d>(R4())), Floats2d, Floats2d>);
static_assert(is<decltype(with_array<L2>(R4())), L2, L2>);
static_assert(is<decltype(with_array<Ragged>(R4())), Ragged, Ragged>);
static_assert(is<decltype(with_array<Padded>(R4())), Padded, Padded>);
static_assert(is<decltype(with_array2d<Floats2d>(R4())), Floats2d, Floats2d>);
static_assert(is<decltype(with_array2d<L2>(R4())), L2, L2>);
static_assert(is<decltype(with_array2d<Ragged>(R4())), Ragged, Ragged>);
static_assert(is<decltype(with_array2d<Padded>(R4())), Padded, Padded>);

using PaddedLayer = decltype(with_array<Padded>(R4()));
static_assert(is<decltype(with_padded<Padded>(PaddedLayer(R4()))), Padded, Padded>);
static_assert(is<decltype(with_padded<Ragged>(PaddedLayer(R4()))), Ragged, Ragged>);
static_assert(is<decltype(with_padded<L2>(PaddedLayer(R4()))), L2, L2>);
static_assert(is<decltype(with_padded<Floats3d>(PaddedLayer(R4()))), Floats3d, Floats3d>);

using RaggedLayer = decltype(with_array<Ragged>(R4()));
static_assert(is<decltype(with_ragged<Ragged>(RaggedLayer(R4()))), Ragged, Ragged>);
static_assert(is<decltype(with_ragged<L2>(RaggedLayer(R4()))), L2, L2>);
static_assert(is<decltype(with_ragged<Padded>(RaggedLayer(R4()))), Padded, Padded>);

using ListLayer = decltype(with_array<L2>(R4()));
static_assert(is<decltype(with_list<L2>(ListLayer(R4()))), L2, L2>);
static_assert(is<decltype(with_list<Ragged>(ListLayer(R4()))), Ragged, Ragged>);
static_assert(is<decltype(with_list<Padded>(ListLayer(R4()))), Padded, Padded>);
static_assert(is<decltype(with_flatten(ListLayer(R4()))), NestedList<Floats2d>, NestedList<Floats2d>>);

// Static widths through the wrappers, for chain's checks.
static_assert(decltype(with_array<Ragged>(Relu<512>()))::static_nO == 512);
static_assert(decltype(with_array<L2>(Relu<512, 64>()))::static_nI == 64);
static_assert(decltype(with_list<Padded>(ListLayer(R4())))::static_nO == 4);
static_assert(decltype(list2ragged())::width_preserving);
// chain's width propagation rebinds the layer's nI through the wrapper.
static_assert(std::is_same_v<decltype(Relu<8, 4>() >> with_array<Floats2d>(Relu<5>())),
                             Chain<Relu<8, 4>, WithArray<Relu<5, 8>, Floats2d>>>);
}  // namespace sig

namespace {
using tenon::test::error_message;
std::string id_of(const std::string& what) {
    return what.size() > 1 && what[0] == '[' ? what.substr(1, what.find(']') - 1) : what;
}
List<Floats2d> random_list(std::initializer_list<std::size_t> lengths, std::size_t width, std::uint64_t seed) {
    List<Floats2d> xs;
    for (std::size_t n : lengths) xs.push_back(testing::random_array(n, width, seed++));
    return xs;
}

// Reading and comparing values of any of the data types.
template <class T>
T read_value(const Case& c, const std::string& key) {
    if constexpr (std::is_same_v<T, Ragged>) return read_ragged(c, key);
    else if constexpr (std::is_same_v<T, Padded>) return read_padded(c, key);
    else if constexpr (std::is_same_v<T, List<Floats2d>>) return read_list(c, key);
    else if constexpr (std::is_same_v<T, NestedList<Floats2d>>) {
        NestedList<Floats2d> out(static_cast<std::size_t>(std::lround(c.scalar(key + ".n"))));
        for (std::size_t i = 0; i < out.size(); ++i) out[i] = read_list(c, key + "." + std::to_string(i));
        return out;
    } else return read_array<T>(c, key);
}
template <class T>
void check_value(const Case& c, const std::string& key, const T& v) {
    constexpr double rtol = 1e-5, atol = 1e-5;
    if constexpr (std::is_same_v<T, NestedList<Floats2d>>) {
        REQUIRE(v.size() == static_cast<std::size_t>(std::lround(c.scalar(key + ".n"))));
        for (std::size_t i = 0; i < v.size(); ++i) check_close(c, key + "." + std::to_string(i), v[i], rtol, atol);
    } else {
        check_close(c, key, v, rtol, atol);
    }
}

// A transfer layer (no parameters) on the case's X: Y and dX as Thinc's.
template <class M>
void oracle_transfer(M model, const std::string& name) {
    INFO("case " << name);
    Case c(name);
    const auto x = read_value<typename M::In>(c, "X");
    auto [y, bp] = model.begin_update(x);
    check_value(c, "Y", y);
    check_value(c, "dX", bp(read_value<typename M::Out>(c, "dY")));
    check_value(c, "Y", model.predict(x));
}
// A wrapper over a Linear(3, 4) with Thinc's weights: Y, dX, dW, db as Thinc's.
// plans: whether the chain around it runs a plan.
template <class M>
void oracle_wrapper(M model, const std::string& name, bool plans) {
    INFO("case " << name);
    Case c(name);
    model.initialize();
    Node* lin = child_named(model, "linear");
    lin->set_param("W", c.param("W"));
    lin->set_param("b", c.param("b"));
    // The same wrapper inside a chain, whose calls run its plan (docs/lowering.md): over a
    // List, a Ragged or a Padded the wrapper is stages on the sequences' rows (a Padded's
    // with_array / with_array2d on its steps x sequences rows); over an array of steps
    // (with_padded<Floats3d>) or a list of lists, the chain runs its layers.
    auto planned = noop<typename M::In>() >> M(model);
    const auto x = read_value<typename M::In>(c, "X");
    auto check = [&](auto& m, Node* l) {
        auto [y, bp] = m.begin_update(x);
        check_value(c, "Y", y);
        check_value(c, "dX", bp(read_value<typename M::Out>(c, "dY")));
        check_close(c, "dW", l->get_grad("W"), 1e-5, 1e-5);
        check_close(c, "db", l->get_grad("b"), 1e-5, 1e-5);
        check_value(c, "Y", m.predict(x));
    };
    check(model, lin);
    check(planned, child_named(planned, "linear"));
    CHECK(planned.uses_plan() == plans);
}
using Lin = Linear<3, 4>;
using L2 = List<Floats2d>;
}  // namespace

TEST_CASE("transfer layers agree with Thinc", "[transfers][oracle]") {
    oracle_transfer(list2array(), "list2array");
    oracle_transfer(list2ragged(), "list2ragged");
    oracle_transfer(list2padded(), "list2padded");
    oracle_transfer(ragged2list(), "ragged2list");
    oracle_transfer(padded2list(), "padded2list");
}

TEST_CASE("with_array and with_array2d agree with Thinc on every kind", "[transfers][oracle]") {
    oracle_wrapper(with_array<L2>(Lin()), "with_array_list", true);
    oracle_wrapper(with_array<L2>(Lin(), 2), "with_array_list_pad", true);
    oracle_wrapper(with_array<Ragged>(Lin()), "with_array_ragged", true);
    oracle_wrapper(with_array<Floats2d>(Lin()), "with_array_array", true);
    // Thinc's with_array gives a Padded's 3d data to the Linear, which fails; tenon's
    // with_array<Padded> reshapes as Thinc's with_array2d does.
    oracle_wrapper(with_array<Padded>(Lin()), "with_array2d_padded", true);
    oracle_wrapper(with_array2d<L2>(Lin()), "with_array2d_list", true);
    oracle_wrapper(with_array2d<Ragged>(Lin()), "with_array2d_ragged", true);
    oracle_wrapper(with_array2d<Padded>(Lin()), "with_array2d_padded", true);
    oracle_wrapper(with_array2d<Floats2d>(Lin()), "with_array2d_array", true);
}

TEST_CASE("with_padded, with_ragged, with_list, with_flatten agree with Thinc on every kind", "[transfers][oracle]") {
    auto padded = [] { return with_array<Padded>(Lin()); };
    oracle_wrapper(with_padded<Padded>(padded()), "with_padded_padded", true);
    oracle_wrapper(with_padded<Ragged>(padded()), "with_padded_ragged", true);
    oracle_wrapper(with_padded<L2>(padded()), "with_padded_list", true);
    oracle_wrapper(with_padded<Floats3d>(padded()), "with_padded_array", false);
    auto ragged = [] { return with_array<Ragged>(Lin()); };
    oracle_wrapper(with_ragged<Ragged>(ragged()), "with_ragged_ragged", true);
    oracle_wrapper(with_ragged<L2>(ragged()), "with_ragged_list", true);
    oracle_wrapper(with_ragged<Padded>(ragged()), "with_ragged_padded", true);
    auto list = [] { return with_array<L2>(Lin()); };
    oracle_wrapper(with_list<L2>(list()), "with_list_list", true);
    oracle_wrapper(with_list<Ragged>(list()), "with_list_ragged", true);
    oracle_wrapper(with_list<Padded>(list()), "with_list_padded", true);
    oracle_wrapper(with_flatten(list()), "flatten_v2_list", false);
    oracle_wrapper(with_flatten_v2(list()), "flatten_v2_list", false);
}

// ---------------------------------------------------------------------------------------
// Gradient checks: every transfer and every kind each wrapper takes (widths inferred from
// the sample through the wrapper: Linear<3>'s nI is dyn).
// ---------------------------------------------------------------------------------------
namespace {
template <class M, class X>
void gradcheck(M model, const X& x) {
    INFO(model.name());
    model.initialize(x);
    testing::randomize_params(model, 5);
    testing::require_gradients(model, x);
}
}  // namespace

TEST_CASE("gradient checks of the transfer layers", "[transfers][gradcheck]") {
    const auto xs = random_list({2, 0, 3, 3, 1}, 4, 1);
    gradcheck(list2array(), xs);
    gradcheck(list2ragged(), xs);
    gradcheck(list2padded(), xs);
    gradcheck(ragged2list(), to_ragged(xs));
    gradcheck(padded2list(), to_padded(xs));
}

TEST_CASE("gradient checks of the wrappers on every kind", "[transfers][gradcheck]") {
    const auto xs = random_list({2, 0, 3, 3, 1}, 4, 1);
    const auto r = to_ragged(xs);
    const auto p = to_padded(xs);
    const Floats2d a = testing::random_array(5, 4, 9);
    gradcheck(with_array<L2>(Linear<3>()), xs);
    gradcheck(with_array<L2>(Relu<3>(), 1), xs);
    gradcheck(with_array<Ragged>(Linear<3>()), r);
    gradcheck(with_array<Padded>(Linear<3>()), p);
    gradcheck(with_array<Floats2d>(Linear<3>()), a);
    gradcheck(with_array2d<L2>(Linear<3>()), xs);
    gradcheck(with_array2d<Ragged>(Linear<3>()), r);
    gradcheck(with_array2d<Padded>(Relu<3>()), p);
    gradcheck(with_array2d<Floats2d>(Linear<3>()), a);

    gradcheck(with_padded<Padded>(with_array<Padded>(Linear<3>())), p);
    gradcheck(with_padded<Ragged>(with_array<Padded>(Linear<3>())), r);
    gradcheck(with_padded<L2>(with_array<Padded>(Linear<3>())), xs);
    Floats3d a3({3, 2, 4}, uninitialized);
    Rng rng(3);
    for (float& v : a3) v = static_cast<float>(rng.uniform(-1.0, 1.0));
    gradcheck(with_padded<Floats3d>(with_array<Padded>(Linear<3>())), a3);

    gradcheck(with_ragged<Ragged>(with_array<Ragged>(Linear<3>())), r);
    gradcheck(with_ragged<L2>(with_array<Ragged>(Linear<3>())), xs);
    gradcheck(with_ragged<Padded>(with_array<Ragged>(Linear<3>())), p);

    gradcheck(with_list<L2>(with_array<L2>(Linear<3>())), xs);
    gradcheck(with_list<Ragged>(with_array<L2>(Linear<3>())), r);
    gradcheck(with_list<Padded>(with_array<L2>(Linear<3>())), p);

    gradcheck(with_flatten(with_array<L2>(Linear<3>())), NestedList<Floats2d>{xs, {}, random_list({1, 2}, 4, 20)});
}

// ---------------------------------------------------------------------------------------
// Edge cases.
// ---------------------------------------------------------------------------------------
TEST_CASE("empty batches give empty outputs and gradients", "[transfers][edge]") {
    const L2 none;
    {
        auto m = list2array();
        auto [y, bp] = m.begin_update(none);
        CHECK(y.shape(0) == 0);
        CHECK(bp(y).empty());
    }
    {
        auto m = list2ragged();
        auto [y, bp] = m.begin_update(none);
        CHECK(y.size() == 0);
        CHECK(bp(y).empty());
    }
    {
        auto m = list2padded();
        auto [y, bp] = m.begin_update(none);
        CHECK(y.size() == 0);
        CHECK(y.steps() == 0);
        CHECK(bp(y).empty());
    }
    {
        auto m = padded2list();
        auto [y, bp] = m.begin_update(to_padded(none));
        CHECK(y.empty());
        CHECK(bp(y).size() == 0);
    }
    auto empty_through = [&](auto model) {
        INFO(model.name());
        model.initialize();
        auto [y, bp] = model.begin_update(none);
        CHECK(y.empty());
        CHECK(bp(y).empty());
        for (Node* n : model.walk())
            for (const auto& p : n->param_names())
                for (float g : n->get_grad(p)) CHECK(g == 0.0f);
    };
    empty_through(with_array<L2>(Lin()));
    empty_through(with_array<L2>(Lin(), 1));
    empty_through(with_padded<L2>(with_array<Padded>(Lin())));
    empty_through(with_ragged<L2>(with_array<Ragged>(Lin())));
    empty_through(with_list<L2>(with_array<L2>(Lin())));
    // A Ragged with no sequences still has a width: it goes through the layer.
    auto m = with_array<Ragged>(Lin());
    m.initialize();
    const Ragged r0(Floats2d({0, 4}), Ints1d({0}));
    auto [y, bp] = m.begin_update(r0);
    CHECK(y.size() == 0);
    CHECK(y.data().shape() == std::array<std::size_t, 2>{0, 3});
    CHECK(bp(y).data().shape() == std::array<std::size_t, 2>{0, 4});
    auto f = with_flatten(with_array<L2>(Lin()));
    f.initialize();
    CHECK(f.predict(NestedList<Floats2d>{}).empty());
    CHECK(f.predict(NestedList<Floats2d>{{}, {}}).size() == 2);
}

TEST_CASE("zero-length sequences keep their place and width", "[transfers][edge]") {
    const auto zeros = random_list({0, 0}, 4, 1);
    auto m = with_array<L2>(Lin(), 1);
    m.initialize();
    auto [y, bp] = m.begin_update(zeros);
    REQUIRE(y.size() == 2);
    CHECK(y[1].shape() == std::array<std::size_t, 2>{0, 3});
    CHECK(bp(y)[0].shape() == std::array<std::size_t, 2>{0, 4});
    auto wr = with_ragged<Padded>(with_array<Ragged>(Lin()));
    wr.initialize();
    const auto p = to_padded(random_list({0, 2, 0}, 4, 3));
    auto [yp, bpp] = wr.begin_update(p);
    CHECK(yp.steps() == 2);
    CHECK(std::equal(yp.indices().begin(), yp.indices().end(), p.indices().begin()));
    CHECK(bpp(yp).data().shape() == p.data().shape());
    auto r2l = ragged2list();
    const Ragged r(Floats2d({0, 4}), {0, 0, 0});
    auto [ys, bpr] = r2l.begin_update(r);
    CHECK(ys.size() == 3);
    CHECK(bpr(ys).data().shape() == std::array<std::size_t, 2>{0, 4});
}

TEST_CASE("broken layouts and wrong widths are clear errors", "[transfers][errors]") {
    // A Ragged whose lengths do not sum to its rows cannot be made (the transfers rely on it).
    const std::string bad_ragged = error_message([] { Ragged(Floats2d({3, 4}), {1, 1}); });
    CHECK(id_of(bad_ragged) == "tenon-E152");
    CHECK_THAT(bad_ragged, Catch::Contains("lengths must sum to the data's rows: expected 3"));

    const auto xs = random_list({2, 0, 3}, 4, 1);
    // Wrong width: the wrapped layer says so, by name.
    auto m = with_array<Ragged>(Lin());
    m.initialize();
    const std::string wide = error_message([&] { m.predict(to_ragged(random_list({2, 1}, 5, 1))); });
    CHECK(id_of(wide) == "tenon-E101");
    CHECK_THAT(wide, Catch::Contains("linear") && Catch::Contains("expected width 4 but found 5"));
    // Arrays of different widths in one list.
    L2 mixed{Floats2d({1, 4}), Floats2d({1, 5})};
    auto ml = with_array<L2>(Lin());
    ml.initialize();
    CHECK(id_of(error_message([&] { ml.predict(mixed); })) == "tenon-E150");
    CHECK(id_of(error_message([&] { list2ragged().predict(mixed); })) == "tenon-E150");

    // Gradients whose layout is not the output's: E170, naming the layer and both layouts.
    {
        auto [y, bp] = m.begin_update(to_ragged(xs));
        const std::string e = error_message([&, &bp = bp] { bp(Ragged(Floats2d({5, 3}), {3, 0, 2})); });
        CHECK(id_of(e) == "tenon-E170");
        CHECK_THAT(e, Catch::Contains("with_array(linear)") && Catch::Contains("[2, 0, 3]") &&
                          Catch::Contains("[3, 0, 2]"));
    }
    {
        auto [y, bp] = ml.begin_update(xs);
        CHECK(id_of(error_message([&, &bp = bp] { bp(random_list({2, 3}, 3, 1)); })) == "tenon-E170");
        CHECK(id_of(error_message([&, &bp = bp] { bp(random_list({2, 1, 3}, 3, 1)); })) == "tenon-E170");
    }
    {
        auto mp = with_array<Padded>(Lin());
        mp.initialize();
        auto [y, bp] = mp.begin_update(to_padded(xs));
        CHECK(id_of(error_message([&, &bp = bp] { bp(to_padded(random_list({3, 0, 2}, 3, 1))); })) == "tenon-E170");
    }
    {
        auto l2a = list2array();
        auto [y, bp] = l2a.begin_update(xs);
        CHECK(id_of(error_message([&, &bp = bp] { bp(Floats2d({4, 4})); })) == "tenon-E170");
        auto l2r = list2ragged();
        auto [yr, bpr] = l2r.begin_update(xs);
        CHECK(id_of(error_message([&, &bpr = bpr] { bpr(Ragged(Floats2d({5, 4}), {5, 0, 0})); })) == "tenon-E170");
        auto l2p = list2padded();
        auto [yp, bpp] = l2p.begin_update(xs);
        CHECK(id_of(error_message([&, &bpp = bpp] { bpp(to_padded(random_list({3, 2}, 4, 1))); })) == "tenon-E170");
        auto r2l = ragged2list();
        auto [ys, bps] = r2l.begin_update(to_ragged(xs));
        CHECK(id_of(error_message([&, &bps = bps] { bps(random_list({2, 0}, 4, 1)); })) == "tenon-E170");
        auto p2l = padded2list();
        auto [ys2, bps2] = p2l.begin_update(to_padded(xs));
        CHECK(id_of(error_message([&, &bps2 = bps2] { bps2(random_list({3, 0, 2}, 4, 1)); })) == "tenon-E170");
    }
    {
        auto wl = with_list<Ragged>(with_array<L2>(Lin()));
        wl.initialize();
        auto [y, bp] = wl.begin_update(to_ragged(xs));
        CHECK(id_of(error_message([&, &bp = bp] { bp(Ragged(Floats2d({5, 3}), {5})); })) == "tenon-E170");
        auto wp = with_padded<Floats3d>(with_array<Padded>(Lin()));
        wp.initialize();
        auto [y3, bp3] = wp.begin_update(Floats3d({2, 3, 4}));
        CHECK(id_of(error_message([&, &bp3 = bp3] { bp3(Floats3d({3, 2, 3})); })) == "tenon-E170");
        auto wf = with_flatten(with_array<L2>(Lin()));
        wf.initialize();
        auto [yf, bpf] = wf.begin_update(NestedList<Floats2d>{xs});
        CHECK(id_of(error_message([&, &bpf = bpf] { bpf(NestedList<Floats2d>{}); })) == "tenon-E170");
    }
}

namespace {
// A layer that drops its last row / item: the wrappers cannot split its output back.
struct DropRow : Layer<DropRow, Floats2d, Floats2d> {
    DropRow() : Layer("droprow", {}, {}) { mark_initialized(); }
    struct Backprop {
        Floats2d operator()(Floats2dCView dY) const { return Floats2d(dY); }
    };
    void init_impl(const Floats2dCView*, const Floats2dCView*) {}
    Floats2d predict_impl(Floats2dCView X) const {
        return Floats2d(Floats2dCView(X.data(), {X.shape(0) ? X.shape(0) - 1 : 0, X.shape(1)}));
    }
    std::pair<Floats2d, Backprop> forward_impl(Floats2dCView X, bool) { return {predict_impl(X), {}}; }
};
struct DropItem : Layer<DropItem, L2, L2> {
    DropItem() : Layer("dropitem", {}, {}) { mark_initialized(); }
    struct Backprop {
        L2 operator()(const L2& dY) const { return dY; }
    };
    void init_impl(const L2*, const L2*) {}
    L2 predict_impl(const L2& X) const { return L2(X.begin(), X.end() - (X.empty() ? 0 : 1)); }
    std::pair<L2, Backprop> forward_impl(const L2& X, bool) { return {predict_impl(X), {}}; }
};
}  // namespace

TEST_CASE("a wrapped layer that changes the rows or lengths is a clear error", "[transfers][errors]") {
    const auto xs = random_list({2, 0, 3}, 4, 1);
    const std::string e = error_message([&] { with_array<Ragged>(DropRow()).predict(to_ragged(xs)); });
    CHECK(id_of(e) == "tenon-E171");
    CHECK_THAT(e, Catch::Contains("with_array(droprow)") && Catch::Contains("expected 5 but it returned 4"));
    CHECK(id_of(error_message([&] { with_array<L2>(DropRow()).predict(xs); })) == "tenon-E171");
    CHECK(id_of(error_message([&] { with_array<Padded>(DropRow()).predict(to_padded(xs)); })) == "tenon-E171");
    CHECK(id_of(error_message([&] { with_list<Ragged>(DropItem()).predict(to_ragged(xs)); })) == "tenon-E171");
    CHECK(id_of(error_message([&] { with_list<Padded>(DropItem()).predict(to_padded(xs)); })) == "tenon-E171");
    CHECK(id_of(error_message([&] { with_flatten(DropItem()).predict(NestedList<Floats2d>{xs}); })) == "tenon-E171");
}

TEST_CASE("wrappers give the child's dims and pad attribute, and run in a chain of arrays", "[transfers]") {
    auto m = with_array<Ragged>(Relu<6>(), 3);
    CHECK(m.name() == "with_array(relu)");
    CHECK(m.attr_as<std::int64_t>("pad") == 3);
    CHECK_FALSE(m.has_dim("nI"));
    m.initialize(to_ragged(random_list({2, 1}, 5, 1)));
    CHECK(m.get_dim("nI") == 5);
    CHECK(m.get_dim("nO") == 6);
    CHECK(m.layer().get_dim("nI") == 5);
    CHECK(with_array2d<L2>(Relu<2>()).name() == "with_array2d(relu)");
    // With a static nI from the layer before it.
    auto c = Relu<8, 4>() >> with_array<Floats2d>(Relu<5>());
    c.initialize();
    CHECK(c.layer<1>().get_dim("nI") == 8);
    CHECK(c.predict(testing::random_array(3, 4, 1)).shape() == std::array<std::size_t, 2>{3, 5});
}
