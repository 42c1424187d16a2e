// Integration: a spaCy-like tok2vec stack (MultiHashEmbed + MaxoutWindowEncoder, and a text
// classifier on top: list2ragged >> reduce_mean >> Softmax) built from tenon's pieces, against
// the same model built from Thinc's layers (tests/integration/gen_thinc_tok2vec.py). Thinc's
// weights are loaded by walking both models depth-first in the same order; then, batch by
// batch: predict, begin_update (training, dropout 0), backprop of Thinc's dY, every
// parameter's gradient, and the weights after one Adam step. Also: a chain of transfers
// compiles and runs, and the stack's edge cases (empty batch, empty docs, bad ids).
#include <catch2/catch.hpp>

#include <tenon/tenon.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "oracle/case.hpp"
#include "support/floats.hpp"
#include "support/gradcheck_any.hpp"
#include "unit/helpers.hpp"
#include "support/error_id.hpp"

using namespace tenon;
using namespace tenon::oracle;

namespace {

// ---------------------------------------------------------------------------------------
// The model, as spaCy's defaults build it (spacy/ml/models/tok2vec.py)
// ---------------------------------------------------------------------------------------
struct Tok2VecConfig {
    std::size_t width = 96;
    std::vector<std::size_t> rows;  // one HashEmbed per feature (id column)
    std::size_t window = 1;
    std::size_t depth = 4;
    std::size_t maxout_pieces = 3;  // the encoder's (MultiHashEmbed's Maxout has nP = 3)
};

// spaCy's MultiHashEmbed.v2 after its FeatureExtractor: one HashEmbed per id column (seeds
// 8, 9, ... as spaCy's make_hash_embed), concatenated, then Maxout(nP=3, normalize).
template <class Ids, std::size_t... F>
auto multi_hash_embed(const Tok2VecConfig& c, std::index_sequence<F...>) {
    const std::size_t width = c.width, nF = sizeof...(F);
    return list2ragged<Ids>() >>
           with_array<BasicRagged<Ids>>(concatenate(HashEmbed<dyn, Ids>(
               c.rows.at(F), HashEmbedOptions{.nO = width, .seed = 8 + F, .column = F, .initializer = {}, .dropout = 0.0})...)) >>
           with_array<Ragged>(Maxout<>({.nO = width, .nI = width * nF, .nP = 3, .dropout = 0.0, .normalize = true})) >>
           ragged2list();
}

// spaCy's MaxoutWindowEncoder.v2.
auto maxout_window_encoder(std::size_t width, std::size_t window, std::size_t maxout_pieces, std::size_t depth) {
    auto cnn = expand_window(window) >> Maxout<>({.nO = width,
                                                  .nI = width * (2 * window + 1),
                                                  .nP = maxout_pieces,
                                                  .dropout = 0.0,
                                                  .normalize = true});
    return with_array<List<Floats2d>>(clone(residual(std::move(cnn)), depth), window * depth);
}

// List<Ids> (one (tokens, features) id matrix per doc) -> List<Floats2d>.
template <class Ids, std::size_t NF>
auto tok2vec(const Tok2VecConfig& c) {
    return multi_hash_embed<Ids>(c, std::make_index_sequence<NF>{}) >>
           maxout_window_encoder(c.width, c.window, c.maxout_pieces, c.depth);
}

// List<Ids> -> Floats2d: one row of class probabilities per doc.
template <class Ids, std::size_t NF>
auto textcat(const Tok2VecConfig& c, std::size_t n_classes) {
    return tok2vec<Ids, NF>(c) >> list2ragged() >> reduce_mean() >>
           Softmax<>(SoftmaxOptions{.nO = n_classes, .nI = c.width});
}

// The same with a Linear output layer, for the finite-difference check (Softmax's backward
// pass takes the gradient of the logits, as Thinc's, so it is not the derivative of Y).
template <class Ids, std::size_t NF>
auto textcat_linear(const Tok2VecConfig& c, std::size_t n_classes) {
    return tok2vec<Ids, NF>(c) >> list2ragged() >> reduce_mean() >> Linear<>({.nO = n_classes, .nI = c.width});
}

// The worked example of docs/combinators.md ("A tok2vec stack"): spaCy's default tok2vec
// (4 features: NORM, PREFIX, SUFFIX, SHAPE; window 1; 3 pieces) with static widths, which
// chain propagates (expand_window<1> gets nI = Width, the encoder's Maxout nI = 3 * Width).
template <extent_t Width>
auto spacy_tok2vec(std::size_t depth) {
    const MaxoutOptions maxout{.nP = 3, .dropout = 0.0, .normalize = true};
    auto embed = list2ragged<Ints2d>() >>
                 with_array<BasicRagged<Ints2d>>(concatenate(HashEmbed<Width>(5000, 8u, 0, 0.0), HashEmbed<Width>(1000, 9u, 1, 0.0),
                                                             HashEmbed<Width>(2500, 10u, 2, 0.0),
                                                             HashEmbed<Width>(2500, 11u, 3, 0.0))) >>
                 with_array<Ragged>(Maxout<Width>(maxout)) >> ragged2list();
    auto encode = with_array<List<Floats2d>>(clone(residual(expand_window<1>() >> Maxout<Width>(maxout)), depth),
                                             /*pad*/ 1 * depth);
    return embed >> encode;
}

// ---------------------------------------------------------------------------------------
// Walking the model: the nodes with parameters, depth-first pre-order (as the generator)
// ---------------------------------------------------------------------------------------
void dfs(Node& n, std::vector<Node*>& out) {
    out.push_back(&n);
    n.for_each_child([&](Node& child) { dfs(child, out); });
}
struct ParamNode {
    Node* node;
    std::vector<std::string> names;
};
std::vector<ParamNode> param_nodes(Node& model) {
    std::vector<Node*> all;
    dfs(model, all);
    std::vector<ParamNode> out;
    for (Node* n : all) {
        std::vector<std::string> names;
        for (const auto& p : n->param_names())
            if (n->has_param(p)) names.push_back(p);
        if (!names.empty()) out.push_back({n, names});
    }
    return out;
}
// The generator's codes for the layers that hold parameters (gen_thinc_tok2vec.py KINDS).
int kind_code(const std::string& name) {
    if (name == "hashembed") return 1;
    if (name == "maxout") return 2;
    if (name == "layernorm") return 3;
    if (name == "softmax") return 4;
    return 0;
}
const char* kind_name(int code) {
    static const char* names[] = {"?", "hashembed", "maxout", "layernorm", "softmax"};
    return code >= 0 && code <= 4 ? names[code] : "?";
}
std::size_t num(const Case& c, const std::string& key) { return static_cast<std::size_t>(std::lround(c.scalar(key))); }

std::string shape_str(const std::vector<std::size_t>& s) {
    std::string out = "(";
    for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
    return out + ")";
}
std::vector<std::size_t> shape_of(CParamView p) { return {p.shape.begin(), p.shape.begin() + p.rank}; }

// Both walks, side by side, for a clear failure when they do not correspond.
std::string walks(const Case& c, const std::vector<ParamNode>& ours) {
    std::ostringstream s;
    const std::size_t theirs = num(c, "n_nodes");
    s << "parameter nodes, depth-first: tenon " << ours.size() << ", Thinc " << theirs << "\n";
    for (std::size_t i = 0; i < std::max(ours.size(), theirs); ++i) {
        s << "  " << i << ": tenon ";
        if (i < ours.size()) {
            s << ours[i].node->name();
            for (const auto& p : ours[i].names) s << " " << p << shape_str(shape_of(ours[i].node->get_param(p)));
        } else {
            s << "-";
        }
        s << " | Thinc ";
        const std::string k = "p" + std::to_string(i);
        if (i < theirs) s << kind_name(static_cast<int>(num(c, k + ".kind")));
        else s << "-";
        s << "\n";
    }
    return s.str();
}

// Loads Thinc's p<i>.<param> into the model's nodes, walking both in the same order; fails
// (with both walks printed) unless the node kinds, parameter names and shapes correspond.
std::vector<ParamNode> load_params(const Case& c, Node& model) {
    auto nodes = param_nodes(model);
    INFO(walks(c, nodes));
    REQUIRE(nodes.size() == num(c, "n_nodes"));
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        const std::string k = "p" + std::to_string(i) + ".";
        INFO("parameter node " << i << " (" << nodes[i].node->name() << ")");
        REQUIRE(kind_code(nodes[i].node->name()) == static_cast<int>(num(c, k + "kind")));
        REQUIRE(nodes[i].names.size() == num(c, k + "names"));
        for (const auto& p : nodes[i].names) {
            INFO("parameter " << p);
            REQUIRE(c.has(k + p));
            REQUIRE(shape_of(nodes[i].node->get_param(p)) == c.get(k + p).shape);
            nodes[i].node->set_param(p, c.param(k + p));
        }
    }
    return nodes;
}

// The ids of a batch: Ints2d as stored, or uint64 keys from 16-bit pieces (lowest first).
template <class Ids>
List<Ids> read_ids(const Case& c, const std::string& key) {
    if constexpr (std::is_same_v<Ids, Ints2d>) {
        return read_list<Ints2d>(c, key);
    } else {
        List<Keys2d> out;
        for (std::size_t d = 0; d < num(c, key + ".n"); ++d) {
            const auto& s = c.get(key + "." + std::to_string(d));
            REQUIRE(s.shape.size() == 2);
            REQUIRE(s.shape[1] % 4 == 0);
            Keys2d ids({s.shape[0], s.shape[1] / 4}, uninitialized);
            for (std::size_t i = 0; i < ids.size(); ++i) {
                std::uint64_t v = 0;
                for (std::size_t p = 0; p < 4; ++p)
                    v |= static_cast<std::uint64_t>(std::llround(s.values[i * 4 + p])) << (16 * p);
                ids[i] = v;
            }
            out.push_back(std::move(ids));
        }
        return out;
    }
}

// Tolerances: forward values and gradients within 1e-5 relative, plus 1e-5 of the array's
// largest value. That second term is set by Thinc itself: its matrix products run on BLIS,
// whose kernel depends on the CPU (zen3, skx, haswell, or sandybridge on a CPU it does not
// know), and its gradients move by up to 1.7e-6 of the array's largest value between kernels
// (BLIS_ARCH_TYPE=4 against the zen3 default; worst in the layers' biases and LayerNorm gains,
// sums over every token). tenon's own summation order is one more such kernel, so a bound
// below ~4e-6 fails on some CPUs with no bug anywhere (CI did, at 1.2e-6 of the largest value
// on a LayerNorm gain); a wrong gradient is off by a sizeable fraction of it. Weights after an
// Adam step within 1e-4 relative plus 1e-4 (a tenth of the learning rate): Adam divides each
// clipped gradient by its own magnitude plus eps, so for an entry of E whose gradient nearly
// cancels (clipped to ~eps) the step itself carries that entry's relative rounding error (up
// to ~2e-5 seen in random runs).
constexpr double rtol = 1e-5, atol = 1e-6, of_largest = 1e-5;
constexpr double rtol_w = 1e-4, atol_w = 1e-4;
double max_abs(const Case& c, const std::string& key) {
    double m = 0.0;
    for (float v : c.get(key).values) m = std::max(m, double(std::abs(v)));
    return m;
}
template <class Got>
void check_scaled(const Case& c, const std::string& key, const Got& got) {
    if constexpr (requires { got.front(); }) {  // a List: the largest value of all its items
        double m = 0.0;
        for (std::size_t i = 0; i < got.size(); ++i) m = std::max(m, max_abs(c, key + "." + std::to_string(i)));
        check_close(c, key, got, rtol, std::max(atol, of_largest * m));
    } else {
        check_close(c, key, got, rtol, std::max(atol, of_largest * max_abs(c, key)));
    }
}

template <class M, class Ids>
void run_case(const Case& c, M model) {
    using Out = typename M::Out;
    REQUIRE(c.get("b0.X.0").shape.size() == 2);
    model.initialize(read_ids<Ids>(c, "b0.X"));
    const auto nodes = load_params(c, model);
    auto opt = Adam(0.001);
    for (std::size_t b = 0; b < num(c, "n_batches"); ++b) {
        const std::string k = "b" + std::to_string(b) + ".";
        INFO("batch " << b);
        const List<Ids> X = read_ids<Ids>(c, k + "X");
        check_scaled(c, k + "Yp", model.predict(X));
        auto [Y, backprop] = model.begin_update(X);
        check_scaled(c, k + "Y", Y);
        Out dY;
        if constexpr (std::is_same_v<Out, Floats2d>) dY = c.f2(k + "dY");
        else dY = read_list<Floats2d>(c, k + "dY");
        const List<Ids> dX = backprop(dY);  // the ids' gradient: zeros, shaped like the ids
        REQUIRE(dX.size() == X.size());
        for (std::size_t d = 0; d < X.size(); ++d) CHECK(dX[d].shape() == X[d].shape());
        for (std::size_t i = 0; i < nodes.size(); ++i)
            for (const auto& p : nodes[i].names) {
                INFO("gradient of node " << i << " (" << nodes[i].node->name() << ") " << p);
                check_scaled(c, k + "g" + std::to_string(i) + "." + p, nodes[i].node->get_grad(p));
            }
        model.finish_update(opt);
        for (std::size_t i = 0; i < nodes.size(); ++i)
            for (const auto& p : nodes[i].names) {
                const std::string key = k + "w" + std::to_string(i) + "." + p;
                INFO("after Adam: node " << i << " (" << nodes[i].node->name() << ") " << p);
                check_close(c, key, nodes[i].node->get_param(p), rtol_w, atol_w);
                // Thinc's weights for the next batch, so that each batch is compared alone.
                nodes[i].node->set_param(p, c.param(key));
            }
    }
}

template <class Ids, std::size_t NF>
void run_nf(const Case& c, const Tok2VecConfig& cfg, std::size_t n_classes) {
    if (n_classes) run_case<decltype(textcat<Ids, NF>(cfg, n_classes)), Ids>(c, textcat<Ids, NF>(cfg, n_classes));
    else run_case<decltype(tok2vec<Ids, NF>(cfg)), Ids>(c, tok2vec<Ids, NF>(cfg));
}

// One case file, whatever its configuration (features 1..6 with Ints2d ids, 1..4 with uint64
// keys; any width, window, depth, encoder pieces, classes).
void run_tok2vec_case(const std::string& name) {
    INFO("case " << name);
    Case c(name);
    Tok2VecConfig cfg;
    cfg.width = num(c, "width");
    cfg.window = num(c, "window");
    cfg.depth = num(c, "depth");
    cfg.maxout_pieces = c.has("nP") ? num(c, "nP") : 3;
    const std::size_t nF = num(c, "nF"), n_classes = num(c, "n_classes");
    const auto& rows = c.get("rows");
    REQUIRE(rows.values.size() == nF);
    for (float r : rows.values) cfg.rows.push_back(static_cast<std::size_t>(std::lround(r)));
    const auto& seeds = c.get("seeds");
    for (std::size_t f = 0; f < nF; ++f) REQUIRE(std::lround(seeds.values.at(f)) == long(8 + f));  // as built here
    const bool keys = num(c, "keys") != 0;
    switch (nF) {
        case 1: keys ? run_nf<Keys2d, 1>(c, cfg, n_classes) : run_nf<Ints2d, 1>(c, cfg, n_classes); break;
        case 2: keys ? run_nf<Keys2d, 2>(c, cfg, n_classes) : run_nf<Ints2d, 2>(c, cfg, n_classes); break;
        case 3: keys ? run_nf<Keys2d, 3>(c, cfg, n_classes) : run_nf<Ints2d, 3>(c, cfg, n_classes); break;
        case 4: keys ? run_nf<Keys2d, 4>(c, cfg, n_classes) : run_nf<Ints2d, 4>(c, cfg, n_classes); break;
        case 5: REQUIRE(!keys); run_nf<Ints2d, 5>(c, cfg, n_classes); break;
        case 6: REQUIRE(!keys); run_nf<Ints2d, 6>(c, cfg, n_classes); break;
        default: FAIL("case " << name << ": " << nF << " features; this test builds models for 1 to 6 (keys: 1 to 4)");
    }
}

}  // namespace

// ---------------------------------------------------------------------------------------
// Signatures
// ---------------------------------------------------------------------------------------
template <class M, class In, class Out>
constexpr bool sig = std::is_same_v<typename M::In, In> && std::is_same_v<typename M::Out, Out>;
static_assert(sig<decltype(tok2vec<Ints2d, 4>(Tok2VecConfig{})), List<Ints2d>, List<Floats2d>>);
static_assert(sig<decltype(tok2vec<Keys2d, 2>(Tok2VecConfig{})), List<Keys2d>, List<Floats2d>>);
static_assert(sig<decltype(textcat<Ints2d, 4>(Tok2VecConfig{}, 3)), List<Ints2d>, Floats2d>);
static_assert(sig<decltype(multi_hash_embed<Ints2d>(Tok2VecConfig{}, std::make_index_sequence<2>{})), List<Ints2d>,
                  List<Floats2d>>);

// ---------------------------------------------------------------------------------------
// Oracle
// ---------------------------------------------------------------------------------------
// Every case the generator wrote (tok2vec_*.txt, textcat_*.txt), so that added cases run too.
std::vector<std::string> case_names(const std::string& prefix) {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(TENON_ORACLE_DIR)) {
        const std::string f = e.path().filename().string();
        if (f.rfind(prefix, 0) == 0 && f.size() > 4 && f.substr(f.size() - 4) == ".txt")
            out.push_back(f.substr(0, f.size() - 4));
    }
    std::sort(out.begin(), out.end());
    return out;
}

TEST_CASE("tok2vec (MultiHashEmbed + MaxoutWindowEncoder) agrees with Thinc", "[integration][tok2vec][oracle]") {
    const auto names = case_names("tok2vec_");
    CHECK(names.size() >= 6);
    for (const auto& name : names) run_tok2vec_case(name);
}

TEST_CASE("the docs' tok2vec (static widths) agrees with Thinc on spaCy's defaults", "[integration][tok2vec][oracle]") {
    using M = decltype(spacy_tok2vec<96>(4));
    static_assert(sig<M, List<Ints2d>, List<Floats2d>>);
    static_assert(widths::static_nO<M>() == 96);
    static_assert(sig<decltype(spacy_tok2vec<96>(4) >> list2ragged() >> reduce_mean() >> Softmax<3>()), List<Ints2d>,
                      Floats2d>);
    Case c("tok2vec_spacy_defaults");
    REQUIRE(num(c, "width") == 96);
    run_case<M, Ints2d>(c, spacy_tok2vec<96>(num(c, "depth")));
}

TEST_CASE("textcat (tok2vec >> list2ragged >> reduce_mean >> Softmax) agrees with Thinc",
          "[integration][textcat][oracle]") {
    const auto names = case_names("textcat_");
    CHECK(names.size() >= 2);
    for (const auto& name : names) run_tok2vec_case(name);
}

// ---------------------------------------------------------------------------------------
// The stack on its own: gradient check, edge cases
// ---------------------------------------------------------------------------------------
namespace {
List<Ints2d> random_docs(std::initializer_list<std::size_t> lengths, std::size_t nF, std::uint64_t seed) {
    Rng rng(seed);
    List<Ints2d> docs;
    for (std::size_t n : lengths) {
        Ints2d d({n, nF}, uninitialized);
        for (auto& v : d) v = static_cast<std::int32_t>(rng.uniform(-50.0, 1e6));
        docs.push_back(std::move(d));
    }
    return docs;
}
using tenon::test::error_id;
}  // namespace

TEST_CASE("tok2vec: finite-difference gradients of every parameter", "[integration][tok2vec][gradcheck]") {
    Tok2VecConfig cfg{.width = 4, .rows = {11, 7}, .window = 1, .depth = 2};
    const List<Ints2d> X = random_docs({3, 0, 1, 4}, 2, 5);
    SECTION("tok2vec") {
        auto model = tok2vec<Ints2d, 2>(cfg);
        model.initialize(X);
        testing::randomize_params(model, 11);
        testing::require_gradients(model, X);
    }
    SECTION("textcat (with a Linear output layer)") {
        auto model = textcat_linear<Ints2d, 2>(cfg, 3);
        model.initialize(X);
        testing::randomize_params(model, 12);
        testing::require_gradients(model, X);
    }
}

TEST_CASE("tok2vec: edge cases", "[integration][tok2vec][edge]") {
    Tok2VecConfig cfg{.width = 8, .rows = {50, 30, 20}, .window = 1, .depth = 2};
    auto model = tok2vec<Ints2d, 3>(cfg);
    auto tc = textcat<Ints2d, 3>(cfg, 4);
    model.initialize(random_docs({2, 5}, 3, 1));
    tc.initialize(random_docs({2, 5}, 3, 1));
    SECTION("an empty batch gives an empty batch") {
        const List<Ints2d> none;
        CHECK(model.predict(none).empty());
        auto [Y, backprop] = model.begin_update(none);
        CHECK(Y.empty());
        CHECK(backprop(Y).empty());
        // The textcat: predict on no documents gives (0, nO) without running the layers (in
        // them, list2ragged of no arrays has 0 columns, as Thinc's ops.flatten, and Softmax
        // would refuse an input of width 0; Thinc's model fails with "Shape mismatch for
        // blis.gemm"). Training on no documents, through the plan it runs only: the same
        // output, and a backprop that adds nothing (docs/lowering.md, "The layers' path").
        const Floats2d P = tc.predict(none);
        CHECK(P.shape() == Floats2d::shape_type{0, 4});
        auto [Pt, tc_backprop] = tc.begin_update(none);
        CHECK(Pt.shape() == Floats2d::shape_type{0, 4});
        CHECK(tc_backprop(Pt).empty());
    }
    SECTION("docs without tokens give (0, width) outputs; the others are as alone") {
        const List<Ints2d> docs = random_docs({0, 4, 0}, 3, 2);
        const List<Floats2d> Y = model.predict(docs);
        REQUIRE(Y.size() == 3);
        CHECK(Y[0].shape() == Floats2d::shape_type{0, 8});
        CHECK(Y[2].shape() == Floats2d::shape_type{0, 8});
        // The padding keeps docs apart: a doc's vectors do not depend on its neighbours.
        const List<Floats2d> alone = model.predict(List<Ints2d>{docs[1]});
        for (std::size_t i = 0; i < alone[0].size(); ++i) CHECK(Y[1][i] == Approx(alone[0][i]).margin(1e-6));
        auto [Yt, backprop] = model.begin_update(docs);
        const List<Ints2d> dX = backprop(Yt);
        CHECK(dX[0].shape() == docs[0].shape());
        // Only empty docs: the textcat's mean over no rows is 0, the Softmax of its bias.
        const Floats2d P = tc.predict(random_docs({0, 0}, 3, 3));
        REQUIRE(P.shape() == Floats2d::shape_type{2, 4});
        CHECK(P(0, 0) == Approx(P(1, 0)));
    }
    SECTION("bad input: clear errors") {
        // A doc with fewer id columns than features: HashEmbed's column is outside it.
        CHECK(error_id([&] { model.predict(random_docs({3}, 2, 4)); }) == "tenon-E194");
        // A gradient for other lengths than the output's.
        auto update = model.begin_update(random_docs({2, 3}, 3, 5));
        List<Floats2d> dY{Floats2d({2, 8}), Floats2d({4, 8})};
        CHECK(error_id([&] { update.second(dY); }) == "tenon-E170");
    }
}

// docs/reliability.md: predict is const and reentrant, for sequence models too. Six threads
// predict at once on one tok2vec (List<Ints2d> -> List<Floats2d>) and one text classifier
// (-> Floats2d), from their first call on (so the chains' lazily made state is made under
// contention too), at batch sizes that differ per thread; every output is compared bit for
// bit with what a single thread's predict gives. make test-tsan runs it under
// ThreadSanitizer ("[threads]").
TEST_CASE("tok2vec: predict from several threads at once gives one thread's bits",
          "[integration][tok2vec][threads]") {
    Tok2VecConfig cfg{.width = 32, .rows = {500, 300, 200}, .window = 1, .depth = 2};
    auto model = tok2vec<Ints2d, 3>(cfg);
    auto tc = textcat<Ints2d, 3>(cfg, 4);
    model.initialize(random_docs({2, 5}, 3, 1));
    tc.initialize(random_docs({2, 5}, 3, 1));
    testing::randomize_params(model, 31);  // Softmax and others start at zero
    testing::randomize_params(tc, 37);
    const std::vector<List<Ints2d>> batches = {random_docs({3, 0, 5, 1}, 3, 41), random_docs({7}, 3, 42),
                                               random_docs({30, 12, 41, 25, 9, 33}, 3, 43),
                                               random_docs({0, 0}, 3, 44), random_docs({1, 2, 3, 4, 5, 6, 7, 8}, 3, 45)};
    constexpr int kThreads = 6, kRounds = 4;
    struct Out {
        std::size_t batch;
        List<Floats2d> vectors;
        Floats2d probs;
    };
    std::vector<std::vector<Out>> got(kThreads);
    std::vector<std::string> errors(kThreads);
    std::vector<std::thread> pool;
    for (int t = 0; t < kThreads; ++t)
        pool.emplace_back([&, t] {
            try {
                for (int r = 0; r < kRounds; ++r) {
                    const std::size_t b = static_cast<std::size_t>(t + r) % batches.size();
                    got[static_cast<std::size_t>(t)].push_back({b, model.predict(batches[b]), tc.predict(batches[b])});
                }
            } catch (const std::exception& e) {
                errors[static_cast<std::size_t>(t)] = e.what();
            }
        });
    for (auto& th : pool) th.join();
    for (const auto& e : errors) CHECK(e.empty());
    auto same_bits = [](const Floats2d& a, const Floats2d& b) {
        return a.shape() == b.shape() && (a.size() == 0 || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
    };
    // One thread's results, after the others.
    std::vector<List<Floats2d>> want_vectors;
    std::vector<Floats2d> want_probs;
    for (const auto& X : batches) {
        want_vectors.push_back(model.predict(X));
        want_probs.push_back(tc.predict(X));
    }
    std::size_t compared = 0, mismatches = 0;
    for (const auto& outs : got)
        for (const Out& o : outs) {
            const List<Floats2d>& want = want_vectors[o.batch];
            bool same = o.vectors.size() == want.size() && same_bits(o.probs, want_probs[o.batch]);
            for (std::size_t d = 0; same && d < want.size(); ++d) same = same_bits(o.vectors[d], want[d]);
            mismatches += same ? 0 : 1;
            ++compared;
        }
    CHECK(compared == std::size_t{kThreads} * kRounds);
    CHECK(mismatches == 0);
}

// Regression (bug found here): HashEmbed, Embed, expand_window and uniqued declared InView
// private, so with_array over them (which names L::InView) did not compile.
TEST_CASE("with_array over HashEmbed, Embed, expand_window, uniqued compiles and runs", "[integration][regression]") {
    const List<Ints2d> docs = random_docs({3, 0, 2}, 2, 7);
    auto he = list2ragged<Ints2d>() >> with_array<BasicRagged<Ints2d>>(HashEmbed<4>(20, 1u, 1)) >> ragged2list();
    auto em = with_array<List<Ints2d>>(uniqued(Embed<4>(1000000, 0), 0));
    auto ew = with_array<List<Floats2d>>(expand_window(1), 1);
    he.initialize(docs);
    const List<Floats2d> Y = he.predict(docs);
    REQUIRE(Y.size() == 3);
    CHECK(Y[1].shape() == Floats2d::shape_type{0, 4});
    em.initialize();
    List<Ints2d> small = docs;
    for (auto& d : small)
        for (auto& v : d) v = std::abs(v) % 1000;
    CHECK(em.predict(small)[0].shape() == Floats2d::shape_type{3, 4});
    ew.initialize(Y);
    const List<Floats2d> W = ew.predict(Y);
    CHECK(W[0].shape() == Floats2d::shape_type{3, 12});
    auto [W2, backprop] = ew.begin_update(Y);
    CHECK(backprop(W2)[2].shape() == Y[2].shape());
}

// ---------------------------------------------------------------------------------------
// Chains of transfers
// ---------------------------------------------------------------------------------------
static_assert(sig<decltype(list2ragged() >> with_array<Ragged>(Relu<4>()) >> ragged2list()), List<Floats2d>,
                  List<Floats2d>>);
static_assert(sig<decltype(list2padded() >> with_array<Padded>(Relu<4>()) >> padded2list()), List<Floats2d>,
                  List<Floats2d>>);
static_assert(sig<decltype(list2ragged() >> with_array<Ragged>(Relu<4>()) >> reduce_mean() >> Softmax<2>()),
                  List<Floats2d>, Floats2d>);

TEST_CASE("chains of transfers compile and run", "[integration][transfers]") {
    const List<Floats2d> Xs{testing::random_array(3, 5, 1), Floats2d({0, 5}), testing::random_array(1, 5, 2),
                            testing::random_array(4, 5, 3)};
    auto via_ragged = list2ragged() >> with_array<Ragged>(Relu<4>()) >> ragged2list();
    auto via_padded = list2padded() >> with_array<Padded>(Relu<4>()) >> padded2list();
    auto via_list = with_array<List<Floats2d>>(Relu<4>());
    auto nested = with_padded<List<Floats2d>>(with_array<Padded>(Relu<4>()));
    auto ragged_in = list2ragged() >> with_list<Ragged>(with_array<List<Floats2d>>(Relu<4>())) >>
                     with_ragged<Ragged>(with_array<Ragged>(Relu<4>())) >> ragged2list();
    auto classify = list2ragged() >> with_array<Ragged>(Relu<4>()) >> reduce_mean() >> Linear<2>();
    via_ragged.initialize(Xs);
    via_padded.initialize(Xs);
    via_list.initialize(Xs);
    nested.initialize(Xs);
    ragged_in.initialize(Xs);
    classify.initialize(Xs);
    // One set of weights everywhere: the routes must agree.
    testing::randomize_params(via_ragged, 21);
    Node& relu = via_ragged.layer<1>().layer();
    for (Node* n : {static_cast<Node*>(&via_padded.layer<1>().layer()), static_cast<Node*>(&via_list.layer()),
                    static_cast<Node*>(&nested.layer().layer())})
        for (const char* p : {"W", "b"}) n->set_param(p, relu.get_param(p));
    const List<Floats2d> Y = via_ragged.predict(Xs);
    REQUIRE(Y.size() == 4);
    CHECK(Y[1].shape() == Floats2d::shape_type{0, 4});
    for (const List<Floats2d>& other : {via_padded.predict(Xs), via_list.predict(Xs), nested.predict(Xs)}) {
        REQUIRE(other.size() == Y.size());
        for (std::size_t d = 0; d < Y.size(); ++d) {
            REQUIRE(other[d].shape() == Y[d].shape());
            for (std::size_t i = 0; i < Y[d].size(); ++i) CHECK(other[d][i] == Approx(Y[d][i]).margin(1e-6));
        }
    }
    auto [Yt, backprop] = via_ragged.begin_update(Xs);
    const List<Floats2d> dX = backprop(Yt);
    REQUIRE(dX.size() == Xs.size());
    for (std::size_t d = 0; d < Xs.size(); ++d) CHECK(dX[d].shape() == Xs[d].shape());
    CHECK(classify.predict(Xs).shape() == Floats2d::shape_type{4, 2});
    CHECK(ragged_in.predict(Xs)[3].shape() == Floats2d::shape_type{4, 4});
    testing::randomize_params(via_padded, 22);
    testing::randomize_params(ragged_in, 23);
    testing::randomize_params(classify, 24);
    testing::require_gradients(via_ragged, Xs);
    testing::require_gradients(via_padded, Xs);
    testing::require_gradients(nested, Xs);
    testing::require_gradients(ragged_in, Xs);
    testing::require_gradients(classify, Xs);
}
