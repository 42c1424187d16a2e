// LSTM and BiLSTM (include/tenon/layers/lstm.hpp): the forward against Thinc 8.1's on the same
// weights, the gradients against PyTorch's nn.LSTM ("[torch]": run where python3-torch is
// installed, tests/recurrent/meson.build) and against finite differences, and the edge cases.
#include <catch2/catch.hpp>
#include <tenon/tenon.hpp>
#include <tenon/types/sequences.hpp>

#include "oracle/case.hpp"
#include "support/error_id.hpp"
#include "support/gradcheck_any.hpp"

#include <cmath>
#include <string>
#include <vector>

using namespace tenon;
using namespace tenon::oracle;

namespace {

const std::vector<std::string> cases = {"lstm", "lstm_depth2", "bilstm", "bilstm_depth2", "lstm_one"};

LSTM<> model_of(const Case& c, const Padded& X) {
    LSTMOptions o;
    o.bi = c.scalar("bi") > 0.5f;
    o.depth = static_cast<std::size_t>(std::lround(c.scalar("depth")));
    LSTM<> m(o, static_cast<std::size_t>(std::lround(c.scalar("nO"))));
    m.initialize(X);
    m.set_param("LSTM", c.param("LSTM"));
    m.set_param("HC0", c.param("HC0"));
    return m;
}

Padded padded_of(std::vector<std::size_t> lengths, std::size_t n, std::uint64_t seed) {
    Rng rng(seed);
    std::vector<Floats2d> xs;
    for (std::size_t len : lengths) {
        Floats2d x({len, n}, uninitialized);
        for (float& v : x) v = static_cast<float>(rng.uniform(-1.0, 1.0));
        xs.push_back(std::move(x));
    }
    return to_padded(List<Floats2d>(std::move(xs)));
}

}  // namespace

TEST_CASE("LSTM: the forward equals Thinc's on the same weights", "[lstm][oracle]") {
    for (const auto& name : cases) {
        INFO("case " << name);
        Case c(name);
        const Padded X = read_padded(c, "X");
        auto m = model_of(c, X);
        check_close(c, "Y", m.predict(X), 1e-5, 1e-6);
        auto [Y, backprop] = m.begin_update(X);
        check_close(c, "Y", Y, 1e-5, 1e-6);
    }
}

TEST_CASE("LSTM: dX and the parameters' gradients equal PyTorch's nn.LSTM", "[lstm][torch]") {
    for (const auto& name : cases) {
        INFO("case " << name);
        Case c(name);
        REQUIRE(c.has("d.LSTM"));  // the generator had no PyTorch: this test is only run with it
        const Padded X = read_padded(c, "X");
        auto m = model_of(c, X);
        auto [Y, backprop] = m.begin_update(X);
        const Padded dX = backprop(read_padded(c, "dY"));
        check_close(c, "dX", dX.data(), 1e-4, 1e-6);
        check_close(c, "d.LSTM", m.get_grad("LSTM"), 1e-4, 1e-6);
        check_close(c, "d.HC0", m.get_grad("HC0"), 1e-4, 1e-6);
    }
}

TEST_CASE("LSTM: gradients by finite differences", "[lstm][gradcheck]") {
    struct Shape {
        bool bi;
        std::size_t depth, nI, nO;
        std::vector<std::size_t> lengths;
    };
    for (const Shape& s : {Shape{false, 1, 3, 4, {3, 1, 2}}, Shape{true, 2, 2, 4, {1, 3, 3, 2}},
                           Shape{false, 2, 2, 3, {2, 0, 4}}}) {
        INFO("bi " << s.bi << " depth " << s.depth);
        LSTM<> m(LSTMOptions{.bi = s.bi, .depth = s.depth}, s.nO, s.nI);
        m.initialize();
        for (float& v : m.get_param("HC0")) v = 0.3f;  // (zeros at first: give them a gradient's worth)
        const Padded X = padded_of(s.lengths, s.nI, 11);
        const auto rep = tenon::testing::gradcheck_any(m, X);
        INFO(rep.text);
        CHECK(rep.ok());
    }
}

TEST_CASE("LSTM: dropout masks the weights in training, never in predict", "[lstm]") {
    LSTM<4, 3> m(LSTMOptions{.depth = 1, .dropout = 0.5});
    m.initialize();
    const Padded X = padded_of({3, 2}, 3, 5);
    LSTM<4, 3> plain(LSTMOptions{});
    plain.initialize();
    plain.set_param("LSTM", m.get_param("LSTM"));
    const Padded P = m.predict(X), P2 = plain.predict(X);
    CHECK(std::equal(P.data().begin(), P.data().end(), P2.data().begin()));
    fix_random_seed(3);
    auto [Y, backprop] = m.begin_update(X);
    bool differs = false;
    for (std::size_t i = 0; i < Y.data().size(); ++i) differs |= Y.data()[i] != P.data()[i];
    CHECK(differs);
    // The finite-difference check with the same mask each time (gradcheck_any fixes the seed).
    const auto rep = tenon::testing::gradcheck_any(m, X);
    INFO(rep.text);
    CHECK(rep.ok());
}

TEST_CASE("LSTM: widths, dims and Thinc's parameter layout", "[lstm]") {
    auto m = BiLSTM<8, 5>(LSTMOptions{.depth = 2});
    m.initialize();
    CHECK(m.get_dim("nO") == 8);
    CHECK(m.get_dim("depth") == 2);
    CHECK(m.get_dim("dirs") == 2);
    // Thinc's expected size: 4 dirs nH (nH + nI) + dirs 8 nH, then per further layer
    // 4 dirs (nH + nH dirs) nH + dirs 8 nH.
    const std::size_t nH = 4, dirs = 2, nI = 5;
    const std::size_t want = 4 * dirs * nH * (nH + nI) + dirs * 8 * nH + 4 * dirs * (nH + nH * dirs) * nH + dirs * 8 * nH;
    CHECK(m.get_param("LSTM").size() == want);
    const auto hc0 = m.get_param("HC0");
    CHECK(hc0.rank == 4);
    CHECK(hc0.shape[0] == 2);
    CHECK(hc0.shape[1] == 2);
    CHECK(hc0.shape[2] == 2);
    CHECK(hc0.shape[3] == nH);
    // The biases start at zero, the weights do not (Glorot, per gate block).
    const auto w = m.get_param("LSTM");
    double sum_bias = 0, sum_w = 0;
    for (std::size_t k = 0; k < 4 * nH * nI; ++k) sum_w += std::abs(w.data[k]);
    for (std::size_t k = 4 * nH * nI; k < 4 * nH * nI + 4 * nH; ++k) sum_bias += std::abs(w.data[k]);
    CHECK(sum_bias == 0.0);
    CHECK(sum_w > 0.0);
}

TEST_CASE("LSTM: edge cases and errors", "[lstm]") {
    LSTM<4, 3> m;
    m.initialize();
    SECTION("an empty batch") {
        const Padded X = padded_of({}, 3, 1);
        const Padded Y = m.predict(X);
        CHECK(Y.size() == 0);
        auto [Y2, backprop] = m.begin_update(X);
        const Padded dX = backprop(Y2);
        CHECK(dX.data().size() == 0);
    }
    SECTION("empty sequences among others") {
        const Padded X = padded_of({2, 0, 3}, 3, 2);
        const Padded Y = m.predict(X);
        CHECK(Y.data().shape(2) == 4);
        // Each sequence computes alone: the same as the batch of it alone.
        const List<Floats2d> ys = to_list(Y);
        const List<Floats2d> alone = to_list(m.predict(padded_of({3}, 3, 2)));  // (not the same data)
        CHECK(ys[1].shape(0) == 0);
        CHECK(alone[0].shape(0) == 3);
    }
    SECTION("a sequence's output does not depend on the others in its batch") {
        const Padded X = padded_of({2, 4, 1}, 3, 7);
        const List<Floats2d> xs = to_list(X), ys = to_list(m.predict(X));
        for (std::size_t i = 0; i < xs.size(); ++i) {
            std::vector<Floats2d> one;
            one.push_back(xs[i]);
            const List<Floats2d> y1 = to_list(m.predict(to_padded(List<Floats2d>(std::move(one)))));
            for (std::size_t k = 0; k < ys[i].size(); ++k) CHECK(y1[0][k] == Approx(ys[i][k]).margin(1e-6));
        }
    }
    SECTION("the input's width") {
        CHECK(tenon::test::error_id([&] { (void)m.predict(padded_of({2}, 5, 1)); }) == "tenon-E101");
    }
    SECTION("the gradient's shape") {
        const Padded X = padded_of({2, 1}, 3, 1);
        auto [Y, backprop] = m.begin_update(X);
        CHECK(tenon::test::error_id([&] { (void)backprop(padded_of({2, 1}, 5, 1)); }) == "tenon-E111");
    }
    SECTION("options") {
        CHECK(tenon::test::error_id([&] { (void)LSTM<>(LSTMOptions{.depth = 0}); }) == "tenon-E285");
        CHECK(tenon::test::error_id([&] { (void)LSTM<>(LSTMOptions{.bi = true}, 5); }) == "tenon-E285");
        CHECK(tenon::test::error_id([&] { (void)LSTM<>(LSTMOptions{.dropout = 1.5}); }) == "tenon-E112");
        LSTM<> bi(LSTMOptions{.bi = true});
        CHECK(tenon::test::error_id([&] { (void)bi.initialize(padded_of({2}, 3, 1), padded_of({2}, 3, 1)); }) == "tenon-E285");
    }
    SECTION("a parameter of another size") {
        LSTM<4, 3> other;
        other.initialize();
        std::vector<float> wrong(10, 0.0f);
        CParamView v;
        v.data = wrong.data();
        v.rank = 1;
        v.shape[0] = wrong.size();
        CHECK_THROWS(other.set_param("LSTM", v));
    }
}

TEST_CASE("LSTM: a tagger over lists (with_padded) trains", "[lstm]") {
    // Embeddings of word ids, a BiLSTM over the sentences, a softmax per word.
    auto model = with_array<List<Ints2d>>(HashEmbed<16, Ints2d>(200, HashEmbedOptions{.seed = 1})) >>
                 with_padded<List<Floats2d>>(BiLSTM<16, 16>()) >> with_array<List<Floats2d>>(Softmax<3>());
    std::vector<Ints2d> docs;
    std::vector<Floats2d> tags;
    Rng rng(4);
    for (std::size_t d = 0; d < 16; ++d) {
        const std::size_t n = 1 + rng.below(6);
        Ints2d doc({n, 1});
        Floats2d y({n, 3});
        for (std::size_t i = 0; i < n; ++i) {
            doc(i, 0) = static_cast<std::int32_t>(rng.below(30));
            y(i, static_cast<std::size_t>(doc(i, 0)) % 3) = 1.0f;  // the tag is the id mod 3
        }
        docs.push_back(std::move(doc));
        tags.push_back(std::move(y));
    }
    const List<Ints2d> X(std::move(docs));
    model.initialize(X);
    Optimizer opt = Adam(0.01);
    auto loss_of = [&](const List<Floats2d>& P) {
        double l = 0;
        for (std::size_t d = 0; d < P.size(); ++d)
            for (std::size_t i = 0; i < P[d].size(); ++i) l -= tags[d][i] * std::log(std::max(P[d][i], 1e-9f));
        return l;
    };
    const double before = loss_of(model.predict(X));
    for (int step = 0; step < 60; ++step) {
        auto [P, backprop] = model.begin_update(X);
        std::vector<Floats2d> dP;
        for (std::size_t d = 0; d < P.size(); ++d) {
            Floats2d g(P[d]);
            for (std::size_t i = 0; i < g.size(); ++i) g[i] -= tags[d][i];
            dP.push_back(std::move(g));
        }
        backprop(List<Floats2d>(std::move(dP)));
        model.finish_update(opt);
    }
    const double after = loss_of(model.predict(X));
    INFO("loss " << before << " -> " << after);
    CHECK(after < 0.2 * before);
}

TEST_CASE("LSTM: a model file round trip", "[lstm]") {
    auto m = BiLSTM<6, 3>(LSTMOptions{.depth = 2});
    m.initialize();
    for (float& v : m.get_param("HC0")) v = 0.25f;
    const auto bytes = m.to_bytes();
    auto m2 = BiLSTM<6, 3>(LSTMOptions{.depth = 2});
    m2.from_bytes(bytes);
    const Padded X = padded_of({3, 2}, 3, 9);
    const Padded a = m.predict(X), b = m2.predict(X);
    CHECK(std::equal(a.data().begin(), a.data().end(), b.data().begin()));
    CHECK(m2.to_bytes() == bytes);
    // Another depth is refused, the model untouched.
    auto m3 = BiLSTM<6, 3>(LSTMOptions{.depth = 1});
    m3.initialize();
    const auto before = m3.to_bytes();
    CHECK_THROWS(m3.from_bytes(bytes));
    CHECK(m3.to_bytes() == before);
}

TEST_CASE("LSTM: the CPU backend's cell equals the functors (fn::lstm_cell_one) on every kind of value", "[lstm]") {
    // The CPU backend runs the cell eight hidden units at a time (AVX2 where the CPU has it,
    // with its own exp and tanh): it must agree with the one definition of the math, the
    // functors, within a few ulp, for small, large and extreme pre-activations and widths with
    // and without a remainder.
    Rng rng(17);
    for (std::size_t nH : {3u, 8u, 13u, 64u}) {
        for (double scale : {0.1, 2.0, 30.0, 200.0}) {
            const std::size_t rows = 5;
            std::vector<float> G(rows * 4 * nH), Cp(rows * nH), dH(rows * nH), dC(rows * nH);
            for (float& v : G) v = static_cast<float>(rng.uniform(-scale, scale));
            for (float& v : Cp) v = static_cast<float>(rng.uniform(-3, 3));
            for (float& v : dH) v = static_cast<float>(rng.uniform(-1, 1));
            for (float& v : dC) v = static_cast<float>(rng.uniform(-1, 1));
            std::vector<float> G1 = G, G2 = G, C1(rows * nH), C2(rows * nH), H1(rows * nH), H2(rows * nH);
            cpu_ops().lstm_cell_forward(G1.data(), Cp.data(), C1.data(), H1.data(), nH, rows, nH);
            for (std::size_t r = 0; r < rows; ++r)
                fn::lstm_cell_row(G2.data() + r * 4 * nH, Cp.data() + r * nH, C2.data() + r * nH, H2.data() + r * nH, nH);
            auto close = [](float a, float b) { return std::abs(a - b) <= 2e-6f + 2e-6f * std::abs(b); };
            INFO("nH " << nH << " scale " << scale);
            for (std::size_t k = 0; k < G1.size(); ++k) REQUIRE(close(G1[k], G2[k]));
            for (std::size_t k = 0; k < C1.size(); ++k) REQUIRE(close(C1[k], C2[k]));
            for (std::size_t k = 0; k < H1.size(); ++k) REQUIRE(close(H1[k], H2[k]));
            std::vector<float> dG1(rows * 4 * nH), dG2(rows * 4 * nH), dCp1(rows * nH), dCp2(rows * nH);
            cpu_ops().lstm_cell_backward(dH.data(), nH, dC.data(), G2.data(), C2.data(), Cp.data(), dG1.data(),
                                         dCp1.data(), rows, nH);
            for (std::size_t r = 0; r < rows; ++r)
                fn::lstm_cell_row_backward(dH.data() + r * nH, dC.data() + r * nH, G2.data() + r * 4 * nH,
                                           C2.data() + r * nH, Cp.data() + r * nH, dG2.data() + r * 4 * nH,
                                           dCp2.data() + r * nH, nH);
            for (std::size_t k = 0; k < dG1.size(); ++k) REQUIRE(close(dG1[k], dG2[k]));
            for (std::size_t k = 0; k < dCp1.size(); ++k) REQUIRE(close(dCp1[k], dCp2[k]));
        }
    }
}
