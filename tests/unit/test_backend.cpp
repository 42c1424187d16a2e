// The backend seam (include/tenon/backend/ops.hpp): every computation of a layer, a plan and
// the optimizer runs on the model's Ops. A backend that forwards to the CPU's and counts its
// calls shows it: a model given it computes the same bits as on the CPU backend, and each
// kind of work (products, row passes, gathers, scatter-adds, segment reductions, optimizer
// passes) arrives there, through the plan and through the layers alone. A layer that called a
// CPU kernel itself would leave a count at zero or the results different.
#include <catch2/catch.hpp>

#include <array>
#include <random>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>
#include <atomic>
#include <cstring>
#include <stdexcept>

#include "tenon/tenon.hpp"
#include "support/host_floats.hpp"
#include "unit/helpers.hpp"

using namespace tenon;
using testing::all_params;
using testing::random_array;
using testing::same;

namespace {

enum Entry : std::size_t {
    e_gemm, e_bias_activate, e_activate, e_activation_backward, e_softmax, e_scale, e_sum_rows, e_maxout,
    e_maxout_backward, e_layernorm, e_layernorm_backward, e_gather, e_scatter, e_sparse_gather, e_sparse_scatter,
    e_segment, e_segment_backward, e_seq2col, e_seq2col_backward, e_softmax_seq, e_softmax_seq_backward, e_scale_rows,
    e_row_dots, e_cauchy, e_cauchy_backward, e_copy_rows, e_zero, e_lstm, e_lstm_backward, e_stage_forward, e_stage_backward, e_adam, e_sgd,
    e_sum_squares, e_count_nonfinite, e_elementwise, e_mask_columns, e_dropout_mask, e_axpy, e_count
};

// Forwards to the run's backend (current_ops() when made: the CPU's, or the device backend
// under TENON_TEST_OPS) and counts each entry. Its memory is that backend's, so the run's data
// is its input, and the entries that run a model's calls are that backend's own (a GPU's
// cannot be the CPU's over device memory).
class CountingOps final : public Ops {
public:
    CountingOps() : Ops(current_ops().memory()) {}
    mutable std::array<std::atomic<std::size_t>, e_count> calls{};
    const Ops& inner = current_ops();

    std::size_t operator[](Entry e) const { return calls[e].load(); }
    void reset() {
        for (auto& c : calls) c = 0;
    }
    void hit(Entry e) const { calls[e].fetch_add(1, std::memory_order_relaxed); }

    const char* name() const noexcept override { return "counting"; }
    void gemm(bool ta, bool tb, std::size_t m, std::size_t n, std::size_t k, float alpha, const float* a,
              std::size_t lda, const float* b, std::size_t ldb, float beta, float* c, std::size_t ldc) const override {
        hit(e_gemm);
        inner.gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    }
    // (a product with its bias and activation: counted as a product)
    bool gemm_bias_act(Activation act, std::size_t m, std::size_t n, std::size_t k, const float* X, const float* W,
                       const float* Wp, const float* b, float* Y) const override {
        hit(e_gemm);
        return inner.gemm_bias_act(act, m, n, k, X, W, Wp, b, Y);
    }
    void bias_activate(Activation act, float* Y, const float* b, std::size_t rows, std::size_t n,
                       float* Z) const override {
        hit(e_bias_activate);
        inner.bias_activate(act, Y, b, rows, n, Z);
    }
    void activate(Activation act, const float* X, float* Y, std::size_t n) const override {
        hit(e_activate);
        inner.activate(act, X, Y, n);
    }
    void activation_backward(Activation act, float* d, const float* Y, const float* Z, std::size_t rows,
                             std::size_t n) const override {
        hit(e_activation_backward);
        inner.activation_backward(act, d, Y, Z, rows, n);
    }
    void softmax_rows(float* Y, std::size_t rows, std::size_t n, float inv_t) const override {
        hit(e_softmax);
        inner.softmax_rows(Y, rows, n, inv_t);
    }
    void scale(float* x, std::size_t n, float k) const override {
        hit(e_scale);
        inner.scale(x, n, k);
    }
    void sum_rows_into(const float* d, std::size_t rows, std::size_t n, float* db) const override {
        hit(e_sum_rows);
        inner.sum_rows_into(d, rows, n, db);
    }
    void maxout(const float* Z, const float* b, std::size_t rows, std::size_t nO, std::size_t nP, float* Y,
                std::int32_t* which) const override {
        hit(e_maxout);
        inner.maxout(Z, b, rows, nO, nP, Y, which);
    }
    void maxout_backward(const float* dY, const std::int32_t* which, std::size_t rows, std::size_t nO, std::size_t nP,
                         float* dZ) const override {
        hit(e_maxout_backward);
        inner.maxout_backward(dY, which, rows, nO, nP, dZ);
    }
    void layernorm(const float* X, float* Y, std::size_t rows, std::size_t n, const float* G, const float* b,
                   float* Xhat, float* rstd) const override {
        hit(e_layernorm);
        inner.layernorm(X, Y, rows, n, G, b, Xhat, rstd);
    }
    void layernorm_backward(const float* dY, float* dX, const float* Xhat, const float* rstd, std::size_t rows,
                            std::size_t n, const float* G, float* dG, float* db) const override {
        hit(e_layernorm_backward);
        inner.layernorm_backward(dY, dX, Xhat, rstd, rows, n, G, dG, db);
    }
    void gather_add_rows(const float* table, std::size_t width, const std::uint32_t* idx, std::size_t rows,
                         std::size_t per, float* out) const override {
        hit(e_gather);
        inner.gather_add_rows(table, width, idx, rows, per, out);
    }
    void scatter_add_rows(float* table, std::size_t width, const std::uint32_t* idx, std::size_t rows, std::size_t per,
                          const float* d, const float* mask) const override {
        hit(e_scatter);
        inner.scatter_add_rows(table, width, idx, rows, per, d, mask);
    }
    void sparse_gather_add(const float* W, std::size_t nO, std::size_t stride, const std::uint32_t* idx,
                           std::size_t per, const float* values, const std::int32_t* lengths, std::size_t nseg,
                           float* Y) const override {
        hit(e_sparse_gather);
        inner.sparse_gather_add(W, nO, stride, idx, per, values, lengths, nseg, Y);
    }
    void sparse_scatter_add(float* dW, std::size_t nO, std::size_t stride, const std::uint32_t* idx,
                            std::size_t per, const float* values, const std::int32_t* lengths, std::size_t nseg,
                            const float* dY, const float* W, float* dvalues) const override {
        hit(e_sparse_scatter);
        inner.sparse_scatter_add(dW, nO, stride, idx, per, values, lengths, nseg, dY, W, dvalues);
    }
    void segment_reduce(Reduce r, const float* X, const std::int32_t* lengths, std::size_t nseg, std::size_t n,
                        float* Y, std::int32_t* which) const override {
        hit(e_segment);
        inner.segment_reduce(r, X, lengths, nseg, n, Y, which);
    }
    void segment_reduce_backward(Reduce r, const float* dY, const std::int32_t* lengths, std::size_t nseg,
                                 std::size_t n, const std::int32_t* which, float* dX) const override {
        hit(e_segment_backward);
        inner.segment_reduce_backward(r, dY, lengths, nseg, n, which, dX);
    }
    void seq2col(const float* X, const std::int32_t* lengths, std::size_t nseg, std::size_t nW, std::size_t n,
                 float* out) const override {
        hit(e_seq2col);
        inner.seq2col(X, lengths, nseg, nW, n, out);
    }
    void backprop_seq2col(const float* dY, const std::int32_t* lengths, std::size_t nseg, std::size_t nW,
                          std::size_t n, float* dX) const override {
        hit(e_seq2col_backward);
        inner.backprop_seq2col(dY, lengths, nseg, nW, n, dX);
    }
    void softmax_sequences(float* x, const std::int32_t* lengths, std::size_t nseg, std::size_t n) const override {
        hit(e_softmax_seq);
        inner.softmax_sequences(x, lengths, nseg, n);
    }
    void backprop_softmax_sequences(const float* dY, const float* Y, const std::int32_t* lengths, std::size_t nseg,
                                    std::size_t n, float* dX) const override {
        hit(e_softmax_seq_backward);
        inner.backprop_softmax_sequences(dY, Y, lengths, nseg, n, dX);
    }
    void scale_rows(const float* X, const float* a, std::size_t rows, std::size_t n, float* Y,
                    bool add) const override {
        hit(e_scale_rows);
        inner.scale_rows(X, a, rows, n, Y, add);
    }
    void row_dots(const float* A, const float* B, std::size_t rows, std::size_t n, float* out) const override {
        hit(e_row_dots);
        inner.row_dots(A, B, rows, n, out);
    }
    void cauchy_similarity(const float* X1, const float* X2, const float* W, std::size_t rows, std::size_t n,
                           float* diff, float* total, float* sim) const override {
        hit(e_cauchy);
        inner.cauchy_similarity(X1, X2, W, rows, n, diff, total, sim);
    }
    void cauchy_similarity_backward(const float* d_sim, const float* diff, const float* total, const float* W,
                                    std::size_t rows, std::size_t n, float* dX1, float* dX2,
                                    float* dW) const override {
        hit(e_cauchy_backward);
        inner.cauchy_similarity_backward(d_sim, diff, total, W, rows, n, dX1, dX2, dW);
    }
    void copy_rows(const float* from, std::size_t from_ld, float* to, std::size_t to_ld, std::size_t rows,
                   std::size_t w, bool add) const override {
        hit(e_copy_rows);
        inner.copy_rows(from, from_ld, to, to_ld, rows, w, add);
    }
    void zero(float* x, std::size_t n) const override {
        hit(e_zero);
        inner.zero(x, n);
    }
    void axpy(float alpha, const float* x, float* y, std::size_t n) const override {
        hit(e_axpy);
        inner.axpy(alpha, x, y, n);
    }
    void elementwise(Binary op, const float* a, const float* b, float* y, std::size_t n) const override {
        hit(e_elementwise);
        inner.elementwise(op, a, b, y, n);
    }
    void mask_columns(const float* X, const float* mask, std::size_t rows, std::size_t n, float* Y) const override {
        hit(e_mask_columns);
        inner.mask_columns(X, mask, rows, n, Y);
    }
    void dropout_mask_bits(std::uint64_t key, float* m, std::size_t n, std::uint64_t kt,
                           std::uint32_t kb) const override {
        hit(e_dropout_mask);
        inner.dropout_mask_bits(key, m, n, kt, kb);
    }
    void lstm_cell_forward(float* G, const float* Cprev, float* C, float* H, std::size_t ldh, std::size_t rows,
                           std::size_t nH) const override {
        hit(e_lstm);
        inner.lstm_cell_forward(G, Cprev, C, H, ldh, rows, nH);
    }
    void lstm_cell_backward(const float* dH, std::size_t ldh, const float* dC, const float* G, const float* C,
                            const float* Cprev, float* dG, float* dCprev, std::size_t rows,
                            std::size_t nH) const override {
        hit(e_lstm_backward);
        inner.lstm_cell_backward(dH, ldh, dC, G, C, Cprev, dG, dCprev, rows, nH);
    }
    void stage_forward_rows(const lowering::Stage& s, const lowering::StageParams& sp,
                            const lowering::Ctx& c) const override {
        hit(e_stage_forward);
        inner.stage_forward_rows(s, sp, c);
    }
    void stage_backward_rows(const lowering::Stage& s, const lowering::StageParams& sp,
                             const lowering::Ctx& c) const override {
        hit(e_stage_backward);
        inner.stage_backward_rows(s, sp, c);
    }
    void adam(float* W, float* G, float* m1, float* m2, float* A, std::size_t n, float gscale, float b1, float b2,
              float lr_t, float eps, float decay_keep, float wd, bool zero_g) const override {
        hit(e_adam);
        inner.adam(W, G, m1, m2, A, n, gscale, b1, b2, lr_t, eps, decay_keep, wd, zero_g);
    }
    void sgd(float* W, float* G, float* A, std::size_t n, float gscale, float lr, float decay_keep, float wd,
             bool zero_g) const override {
        hit(e_sgd);
        inner.sgd(W, G, A, n, gscale, lr, decay_keep, wd, zero_g);
    }
    double sum_squares(const float* x, std::size_t n) const override {
        hit(e_sum_squares);
        return inner.sum_squares(x, n);
    }
    std::size_t count_nonfinite(const float* x, std::size_t n) const override {
        hit(e_count_nonfinite);
        return inner.count_nonfinite(x, n);
    }
};

// A backend whose products refuse: a model on it must fail, never compute on the CPU behind
// its back.
class RefusingOps final : public Ops {
public:
    RefusingOps() : Ops(current_ops().memory()) {}
    const char* name() const noexcept override { return "refusing"; }
    [[noreturn]] static void no() { throw std::runtime_error("refusing backend called"); }
    void gemm(bool, bool, std::size_t, std::size_t, std::size_t, float, const float*, std::size_t, const float*,
              std::size_t, float, float*, std::size_t) const override { no(); }
    void bias_activate(Activation, float*, const float*, std::size_t, std::size_t, float*) const override { no(); }
    void activate(Activation, const float*, float*, std::size_t) const override { no(); }
    void activation_backward(Activation, float*, const float*, const float*, std::size_t, std::size_t) const override {
        no();
    }
    void softmax_rows(float*, std::size_t, std::size_t, float) const override { no(); }
    void scale(float*, std::size_t, float) const override { no(); }
    void sum_rows_into(const float*, std::size_t, std::size_t, float*) const override { no(); }
    void maxout(const float*, const float*, std::size_t, std::size_t, std::size_t, float*, std::int32_t*) const override {
        no();
    }
    void maxout_backward(const float*, const std::int32_t*, std::size_t, std::size_t, std::size_t, float*) const override {
        no();
    }
    void layernorm(const float*, float*, std::size_t, std::size_t, const float*, const float*, float*,
                   float*) const override { no(); }
    void layernorm_backward(const float*, float*, const float*, const float*, std::size_t, std::size_t, const float*,
                            float*, float*) const override { no(); }
    void gather_add_rows(const float*, std::size_t, const std::uint32_t*, std::size_t, std::size_t,
                         float*) const override { no(); }
    void scatter_add_rows(float*, std::size_t, const std::uint32_t*, std::size_t, std::size_t, const float*,
                          const float*) const override { no(); }
    void sparse_gather_add(const float*, std::size_t, std::size_t, const std::uint32_t*, std::size_t, const float*,
                           const std::int32_t*, std::size_t, float*) const override { no(); }
    void sparse_scatter_add(float*, std::size_t, std::size_t, const std::uint32_t*, std::size_t, const float*,
                            const std::int32_t*, std::size_t, const float*, const float*, float*) const override {
        no();
    }
    void segment_reduce(Reduce, const float*, const std::int32_t*, std::size_t, std::size_t, float*,
                        std::int32_t*) const override { no(); }
    void segment_reduce_backward(Reduce, const float*, const std::int32_t*, std::size_t, std::size_t,
                                 const std::int32_t*, float*) const override { no(); }
    void seq2col(const float*, const std::int32_t*, std::size_t, std::size_t, std::size_t, float*) const override {
        no();
    }
    void backprop_seq2col(const float*, const std::int32_t*, std::size_t, std::size_t, std::size_t,
                          float*) const override { no(); }
    void softmax_sequences(float*, const std::int32_t*, std::size_t, std::size_t) const override { no(); }
    void backprop_softmax_sequences(const float*, const float*, const std::int32_t*, std::size_t, std::size_t,
                                    float*) const override { no(); }
    void scale_rows(const float*, const float*, std::size_t, std::size_t, float*, bool) const override { no(); }
    void row_dots(const float*, const float*, std::size_t, std::size_t, float*) const override { no(); }
    void cauchy_similarity(const float*, const float*, const float*, std::size_t, std::size_t, float*, float*,
                           float*) const override { no(); }
    void cauchy_similarity_backward(const float*, const float*, const float*, const float*, std::size_t, std::size_t,
                                    float*, float*, float*) const override { no(); }
    void copy_rows(const float*, std::size_t, float*, std::size_t, std::size_t, std::size_t, bool) const override {
        no();
    }
    void zero(float*, std::size_t) const override { no(); }
    void elementwise(Binary, const float*, const float*, float*, std::size_t) const override { no(); }
    void axpy(float, const float*, float*, std::size_t) const override { no(); }
    void mask_columns(const float*, const float*, std::size_t, std::size_t, float*) const override { no(); }
    void dropout_mask_bits(std::uint64_t, float*, std::size_t, std::uint64_t, std::uint32_t) const override { no(); }
    void lstm_cell_forward(float*, const float*, float*, float*, std::size_t, std::size_t, std::size_t) const override {
        no();
    }
    void lstm_cell_backward(const float*, std::size_t, const float*, const float*, const float*, const float*, float*,
                            float*, std::size_t, std::size_t) const override {
        no();
    }
    void stage_forward_rows(const lowering::Stage&, const lowering::StageParams&, const lowering::Ctx&) const override {
        no();
    }
    void stage_backward_rows(const lowering::Stage&, const lowering::StageParams&, const lowering::Ctx&) const override {
        no();
    }
    void adam(float*, float*, float*, float*, float*, std::size_t, float, float, float, float, float, float, float,
              bool) const override { no(); }
    void sgd(float*, float*, float*, std::size_t, float, float, float, float, bool) const override { no(); }
    double sum_squares(const float*, std::size_t) const override { no(); }
    std::size_t count_nonfinite(const float*, std::size_t) const override { no(); }
};

// Two training steps and a predict of `a` (on its backend) and of its copy (on the CPU's),
// from the same weights and seeds: every output, dX and weight compared with `eq`.
bool close(const std::vector<float>& a, const std::vector<float>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (!(std::fabs(a[i] - b[i]) <= 1e-5f * (1.0f + std::fabs(b[i])))) return false;
    return true;
}
bool close(const Floats2d& a, const Floats2d& b) {
    return a.shape() == b.shape() && close(std::vector<float>(a.begin(), a.end()), std::vector<float>(b.begin(), b.end()));
}
template <class M, class In, class Eq>
void against_cpu(M& a, const In& X, std::size_t nO, Eq eq, bool plans) {
    M b = a;
    to_cpu(b);  // (its parameters to host memory, as its input: the run's may be device memory)
    const auto Xh = to_host(X);
    Optimizer oa = Adam(0.01), ob = Adam(0.01);
    for (int step = 0; step < 2; ++step) {
        const Floats2d dY = random_array(testing::predict_via(plans, a, X).shape(0), nO, 40 + step);
        fix_random_seed(90 + step);
        auto [Ya, bpa] = testing::update_via(plans, a, X);
        const auto dXa = bpa(dY);
        fix_random_seed(90 + step);
        auto [Yb, bpb] = testing::update_via(plans, b, Xh);
        const auto dXb = bpb(dY);
        CHECK(eq(Ya, Yb));
        if constexpr (std::is_same_v<std::decay_t<decltype(dXa)>, Floats2d>) CHECK(eq(dXa, dXb));
        a.finish_update(oa);
        b.finish_update(ob);
        const auto pa = all_params(a), pb = all_params(b);
        REQUIRE(pa.size() == pb.size());
        for (std::size_t i = 0; i < pa.size(); ++i) CHECK(eq(pa[i], pb[i]));
    }
    CHECK(eq(testing::predict_via(plans, a, X), testing::predict_via(plans, b, Xh)));
}
// The same bits on `ops` as on the CPU where `ops` runs on the CPU (a CountingOps of the CPU
// run); within 1e-5 where it runs on the run's device backend.
template <class M, class In>
void same_as_cpu(M& a, const Ops& ops, const In& X, std::size_t nO, bool plans = true) {
    a.set_ops(ops);
    if (&current_ops() != &cpu_ops()) {
        against_cpu(a, X, nO, [](const auto& x, const auto& y) { return close(x, y); }, plans);
        return;
    }
    against_cpu(
        a, X, nO,
        [](const auto& x, const auto& y) {
            if constexpr (std::is_same_v<std::decay_t<decltype(x)>, Floats2d>) return same(x, y);
            else return x == y;
        },
        plans);
}
// Within 1e-5 (`a` stays on its backend, the run's).
template <class M, class In>
void close_to_cpu(M& a, const In& X, std::size_t nO, bool plans = true) {
    against_cpu(a, X, nO, [](const auto& x, const auto& y) { return close(x, y); }, plans);
}

}  // namespace

TEST_CASE("backend: a model's ops run its plan, its layers and its optimizer", "[backend]") {
    CountingOps counting;
    const Floats2d X = random_array(37, 12, 1);
    auto model = Relu<32>({.dropout = 0.1, .normalize = true}) >> residual(Maxout<32, 32, 3>()) >>
                 Sigmoid<16>() >> sigmoid_activation() >> Mish<16>() >> Linear<9>() >> Softmax<9>({.temperature = 2.0});
    model.initialize(X);
    CHECK(&model.ops() == &current_ops());  // the CPU's, or the run's (TENON_TEST_OPS)
    CHECK(std::string(cpu_ops().name()) == "cpu");

    SECTION("through the plan") {
        same_as_cpu(model, counting, X, 9);
        REQUIRE(model.uses_plan());
        CHECK(counting[e_gemm] > 0);
        CHECK(counting[e_stage_forward] > 0);
        CHECK(counting[e_stage_backward] > 0);
        CHECK(counting[e_adam] > 0);
        CHECK(counting[e_sum_squares] > 0);
        // every node of the tree was moved, children included
        for (const Node* n : model.walk()) CHECK(&n->ops() == &counting);
    }
    SECTION("through the layers alone") {
        same_as_cpu(model, counting, X, 9, false);
        REQUIRE(!model.uses_plan());
        CHECK(counting[e_stage_forward] == 0);
        for (Entry e : {e_gemm, e_bias_activate, e_activate, e_activation_backward, e_softmax, e_scale, e_sum_rows,
                        e_maxout, e_maxout_backward, e_layernorm, e_layernorm_backward, e_adam, e_sum_squares})
            CHECK(counting[e] > 0);
    }
    SECTION("SGD too") {
        model.set_ops(counting);
        auto [Y, bp] = model.begin_update(X);
        bp(random_array(37, 9, 5));
        Optimizer sgd = SGD(0.1);
        model.finish_update(sgd);
        CHECK(counting[e_sgd] > 0);
        CHECK(counting[e_adam] == 0);
    }
    SECTION("a backend that refuses is never bypassed") {
        RefusingOps refusing;
        model.set_ops(refusing);
        CHECK_THROWS_WITH(model.predict(X), "refusing backend called");
        CHECK_THROWS_WITH(unfused(model).predict(X), "refusing backend called");
        to_cpu(model);
        CHECK(model.predict(to_host(X)).shape(0) == 37);
    }
}

TEST_CASE("backend: tables, sequences and reductions run on the model's ops", "[backend]") {
    CountingOps counting;
    // One id column into two tables, per-document windows and a Maxout over them, then one
    // reduction of each kind over the documents.
    auto tok = concatenate(HashEmbed<8, Ints2d>(50, HashEmbedOptions{.seed = 3, .column = 0, .dropout = 0.1}),
                           Embed<8, Ints2d>(40, EmbedOptions{.column = 1, .dropout = 0.1})) >>
               LayerNorm<16>() >> Maxout<16, 16, 2>();
    // (then a window encoder over the documents with pad rows, as spaCy's, before the reductions)
    auto model = with_array<List<Ints2d>>(tok) >>
                 with_array<List<Floats2d>>(residual(expand_window<1>() >> Maxout<16, 48, 2>()), 2) >> list2ragged() >>
                 concatenate(reduce_sum(), reduce_mean(), reduce_max(), reduce_first(), reduce_last()) >> Softmax<5>();
    std::vector<Ints2d> docs;
    for (std::size_t d = 0; d < 4; ++d) {
        Ints2d doc({3 + d, 2});
        for (std::size_t i = 0; i < doc.size(); ++i) doc[i] = static_cast<std::int32_t>((i * 7 + d * 3) % 40);
        docs.push_back(std::move(doc));
    }
    const List<Ints2d> X(std::move(docs));
    model.initialize(X);
    SECTION("through the plan") {
        same_as_cpu(model, counting, X, 5);
        REQUIRE(model.uses_plan());
        for (Entry e : {e_gemm, e_gather, e_scatter, e_segment, e_segment_backward, e_seq2col, e_seq2col_backward,
                        e_copy_rows, e_zero, e_stage_forward, e_stage_backward, e_adam})
            CHECK(counting[e] > 0);
    }
    SECTION("through the layers alone") {
        same_as_cpu(model, counting, X, 5, false);
        REQUIRE(!model.uses_plan());
        for (Entry e : {e_gemm, e_gather, e_scatter, e_segment, e_segment_backward, e_seq2col, e_seq2col_backward,
                        e_layernorm, e_maxout, e_adam})
            CHECK(counting[e] > 0);
    }
}

TEST_CASE("backend: set_current_ops gives new models their backend", "[backend]") {
    CountingOps counting;
    const Ops& run = current_ops();  // the CPU's, or the run's (TENON_TEST_OPS)
    set_current_ops(counting);
    auto model = Relu<8>() >> Softmax<3>();
    set_current_ops(cpu_ops());
    CHECK(&current_ops() == &cpu_ops());
    for (const Node* n : model.walk()) CHECK(&n->ops() == &counting);
    const Floats2d X = random_array(5, 4, 2);
    model.initialize(X);
    model.predict(X);
    CHECK(counting[e_gemm] > 0);
    auto other = Relu<8>();
    CHECK(&other.ops() == &cpu_ops());
    set_current_ops(run);
}


// The run's backend is the one TENON_TEST_OPS names (the suite runs again on the device backend
// compiled as host code: name@device-host), and its models compute what the CPU's do, within
// 1e-5, through the plan and through the layers, dense and sequence models, dropout included.
TEST_CASE("backend: the run's backend (TENON_TEST_OPS) computes what the CPU's does", "[backend]") {
    const char* env = std::getenv("TENON_TEST_OPS");
    const std::string want = env && *env ? env : "cpu";
    REQUIRE(std::string(current_ops().name()) == want);
    const Floats2d X = random_array(37, 12, 1);
    auto dense = Relu<32>({.dropout = 0.1, .normalize = true}) >> residual(Maxout<32, 32, 3>()) >> Sigmoid<16>() >>
                 sigmoid_activation() >> Gelu<16>() >> Swish<16>() >> HardSwish<16>() >> Mish<16>() >> Linear<9>() >>
                 Softmax<9>({.temperature = 2.0});
    dense.initialize(X);
    CHECK(std::string(dense.ops().name()) == want);
    // On a device backend the run is on the device: the data the tests make, the models'
    // parameters and gradients, and what the models return all live in device memory (the
    // device allocator's), and a host array is refused (tenon-E342).
    const Memory mem = want == "cpu" ? Memory::host : Memory::device;
    CHECK(X.memory() == mem);
    CHECK(detail::memory_of(X.data()) == mem);
    CHECK(model_memory(dense) == mem);
    for (const Node* n : dense.walk())
        for (const auto& name : n->param_names()) {
            CHECK(detail::memory_of(n->get_param(name).data) == mem);
            CHECK(detail::memory_of(n->get_grad(name).data) == mem);
        }
    {
        auto probe = copy(dense);  // (a copy: the sections below see a model that has not run)
        CHECK(probe.predict(X).memory() == mem);
        if (mem == Memory::device) {
            CHECK(device_memory_stats().in_use > 0);
            CHECK_THROWS_WITH(probe.predict(to_host(X)), Catch::Contains("tenon-E342"));
        }
    }
    auto seq = with_array<List<Ints2d>>(concatenate(HashEmbed<8, Ints2d>(50, HashEmbedOptions{.seed = 3, .column = 0, .dropout = 0.1}),
                                                    Embed<8, Ints2d>(40, EmbedOptions{.column = 1, .dropout = 0.1})) >>
                                        LayerNorm<16>() >> Maxout<16, 16, 2>()) >>
               with_array<List<Floats2d>>(residual(expand_window<1>() >> Maxout<16, 48, 2>()), 2) >> list2ragged() >>
               concatenate(reduce_sum(), reduce_mean(), reduce_max(), reduce_first(), reduce_last()) >> Softmax<5>();
    std::vector<Ints2d> docs;
    for (std::size_t d = 0; d < 5; ++d) {
        Ints2d doc({1 + 2 * d, 2});
        for (std::size_t i = 0; i < doc.size(); ++i) doc[i] = static_cast<std::int32_t>((i * 7 + d * 3) % 40);
        docs.push_back(std::move(doc));
    }
    const List<Ints2d> Xs(std::move(docs));
    seq.initialize(Xs);
    SECTION("through the plan") {
        close_to_cpu(dense, X, 9);
        close_to_cpu(seq, Xs, 5);
        CHECK(dense.uses_plan());
        CHECK(seq.uses_plan());
    }
    SECTION("through the layers alone") {
        close_to_cpu(dense, X, 9, false);
        close_to_cpu(seq, Xs, 5, false);
        CHECK(!dense.uses_plan());
    }
}

TEST_CASE("backend: the CPU's gathers, segment reductions and maxout on known values", "[backend]") {
    const Ops& ops = cpu_ops();
    // table rows 0..3 of width 2: row i = (i, 10 i)
    const float table[8] = {0, 0, 1, 10, 2, 20, 3, 30};
    const std::uint32_t idx[4] = {3, 1, 2, 2};  // two outputs, two rows each
    float out[4];
    ops.gather_add_rows(table, 2, idx, 2, 2, out);
    CHECK((out[0] == 4 && out[1] == 40 && out[2] == 4 && out[3] == 40));
    ops.gather_add_rows(table, 2, idx, 2, 1, out);  // one row each: idx[0], idx[1]
    CHECK((out[0] == 3 && out[1] == 30 && out[2] == 1 && out[3] == 10));

    // two sequences of lengths 2 and 3, width 2
    const float X[10] = {1, 5, 3, 2, /**/ 0, 9, 4, 9, 2, 1};
    const std::int32_t lengths[2] = {2, 3};
    const auto reduce = [&](Reduce r, std::int32_t* which) {
        std::array<float, 4> y{};
        ops.segment_reduce(r, X, lengths, 2, 2, y.data(), which);
        return y;
    };
    CHECK(reduce(Reduce::sum, nullptr) == std::array<float, 4>{4, 7, 6, 19});
    CHECK(reduce(Reduce::mean, nullptr) == std::array<float, 4>{2, 3.5f, 2, 19.0f / 3.0f});
    std::int32_t which[4];
    CHECK(reduce(Reduce::max, which) == std::array<float, 4>{3, 5, 4, 9});
    CHECK((which[0] == 1 && which[1] == 0 && which[2] == 1 && which[3] == 0));  // ties: the first row
    CHECK(reduce(Reduce::first, nullptr) == std::array<float, 4>{1, 5, 0, 9});
    CHECK(reduce(Reduce::last, nullptr) == std::array<float, 4>{3, 2, 2, 1});
    const float dY[4] = {1, 2, 3, 4};
    std::array<float, 10> dX{};
    ops.segment_reduce_backward(Reduce::max, dY, lengths, 2, 2, which, dX.data());
    CHECK(dX == std::array<float, 10>{0, 2, 1, 0, 0, 4, 3, 0, 0, 0});
    dX = {};
    ops.segment_reduce_backward(Reduce::last, dY, lengths, 2, 2, nullptr, dX.data());
    CHECK(dX == std::array<float, 10>{0, 0, 1, 2, 0, 0, 0, 0, 3, 4});

    // seq2col, window 1, over the same two sequences (width 2): each row as (previous, itself,
    // next), zeros beyond its sequence's ends, every value written (the output starts as -1s)
    std::array<float, 30> win;
    win.fill(-1.0f);
    ops.seq2col(X, lengths, 2, 1, 2, win.data());
    CHECK(win == std::array<float, 30>{0, 0, 1, 5, 3, 2, /**/ 1, 5, 3, 2, 0, 0,                    //
                                       0, 0, 0, 9, 4, 9, /**/ 0, 9, 4, 9, 2, 1, /**/ 4, 9, 2, 1, 0, 0});
    // its backward adds each row's slots: the windows' gradients all ones give each row the
    // number of windows that hold it (1 + its neighbours in the sequence), added to 10
    std::array<float, 30> ones;
    ones.fill(1.0f);
    std::array<float, 10> back;
    back.fill(10.0f);
    ops.backprop_seq2col(ones.data(), lengths, 2, 1, 2, back.data());
    CHECK(back == std::array<float, 10>{12, 12, 12, 12, /**/ 12, 12, 13, 13, 12, 12});
    // copy_rows: a column block into a wider array, and added back
    const float blk[4] = {1, 2, 3, 4};
    std::array<float, 6> wide{};
    ops.copy_rows(blk, 2, wide.data() + 1, 3, 2, 2, false);
    CHECK(wide == std::array<float, 6>{0, 1, 2, 0, 3, 4});
    ops.copy_rows(blk, 2, wide.data() + 1, 3, 2, 2, true);
    CHECK(wide == std::array<float, 6>{0, 2, 4, 0, 6, 8});
    ops.zero(wide.data() + 2, 3);
    CHECK(wide == std::array<float, 6>{0, 2, 0, 0, 0, 8});

    // maxout: one row, two outputs of three pieces, with a bias
    const float Z[6] = {1, 5, 2, -1, -3, -2};
    const float b[6] = {0, 0, 4, 0, 0, 0};
    float y[2];
    std::int32_t w[2];
    ops.maxout(Z, b, 1, 2, 3, y, w);
    CHECK((y[0] == 6 && w[0] == 2 && y[1] == -1 && w[1] == 0));
    float dZ[6];
    const float dy[2] = {7, 8};
    ops.maxout_backward(dy, w, 1, 2, 3, dZ);
    CHECK((dZ[0] == 0 && dZ[1] == 0 && dZ[2] == 7 && dZ[3] == 8 && dZ[4] == 0 && dZ[5] == 0));
}

// fn::maxout_row unrolls 2, 3 and 4 pieces (a template per count) and loops over others;
// fn::layernorm_row / layernorm_row_dx sum in four partial sums (fn::sum4). Each against the
// plain loop it replaces (maxout exactly, ties included, with and without a bias; the layer
// norm to float rounding).
TEST_CASE("backend: maxout for every piece count and layer norm's sums equal the plain loops", "[backend]") {
    std::mt19937 rng(7);
    std::uniform_int_distribution<int> small(-3, 3);  // few values: many ties
    std::normal_distribution<float> nd(0.3f, 2.0f);
    for (std::size_t nP = 1; nP <= 6; ++nP)
        for (const bool bias : {false, true}) {
            const std::size_t nO = 37;
            std::vector<float> z(nO * nP), b(nO * nP), y(nO);
            std::vector<std::int32_t> which(nO);
            for (auto& v : z) v = float(small(rng)) * 0.5f;
            for (auto& v : b) v = float(small(rng)) * 0.25f;
            fn::maxout_row(z.data(), bias ? b.data() : nullptr, nO, nP, y.data(), which.data());
            for (std::size_t o = 0; o < nO; ++o) {
                std::size_t arg = 0;
                float best = z[o * nP] + (bias ? b[o * nP] : 0.0f);
                for (std::size_t p = 1; p < nP; ++p)
                    if (const float v = z[o * nP + p] + (bias ? b[o * nP + p] : 0.0f); v > best) best = v, arg = p;
                INFO("nP " << nP << ", bias " << bias << ", output " << o);
                CHECK(y[o] == best);
                CHECK(which[o] == std::int32_t(arg));  // ties: the first piece
            }
        }
    for (const std::size_t n : {1u, 3u, 4u, 5u, 96u, 131u}) {
        std::vector<float> x(n), G(n), b(n), y(n), xh(n), dy(n), dx(n);
        for (auto& v : x) v = nd(rng) * 3.0f;
        for (auto& v : G) v = nd(rng);
        for (auto& v : b) v = nd(rng);
        for (auto& v : dy) v = nd(rng);
        float rstd = 0.0f;
        fn::layernorm_row(x.data(), y.data(), n, G.data(), b.data(), xh.data(), &rstd);
        double mean = 0.0, var = 0.0;  // the plain loops, in double
        for (const float v : x) mean += v;
        mean /= double(n);
        for (const float v : x) var += (v - mean) * (v - mean);
        var /= double(n);
        const auto rs = static_cast<float>(1.0 / std::sqrt(var + double(fn::layernorm_epsilon)));
        CHECK(rstd == Approx(rs).epsilon(1e-6));
        for (std::size_t i = 0; i < n; ++i) {
            const float h = (x[i] - static_cast<float>(mean)) * rs;
            CHECK(xh[i] == Approx(h).epsilon(1e-6).margin(1e-6));
            CHECK(y[i] == Approx(h * G[i] + b[i]).epsilon(1e-6).margin(1e-6));
        }
        fn::layernorm_row_dx(dy.data(), dx.data(), xh.data(), rs, n, G.data());
        double sd = 0.0, sdx = 0.0;
        for (std::size_t i = 0; i < n; ++i) {
            sd += dy[i] * G[i];
            sdx += double(dy[i] * G[i]) * xh[i];
        }
        const float k = rs / float(n);
        for (std::size_t i = 0; i < n; ++i)
            CHECK(dx[i] == Approx(k * (float(n) * (dy[i] * G[i]) - float(sd) - xh[i] * float(sdx))).epsilon(1e-6).margin(1e-7));
    }
}

TEST_CASE("backend: ParametricAttention runs on the model's ops", "[backend]") {
    CountingOps counting;
    auto model = list2ragged() >> with_array<Ragged>(Relu<6>()) >> ParametricAttention_v2(Linear<6, 6>()) >>
                 ParametricAttention<6>() >> reduce_mean() >> Softmax<3>();
    const List<Floats2d> X{std::vector<Floats2d>{random_array(3, 4, 1), Floats2d({0, 4}), random_array(1, 4, 2),
                                                 random_array(5, 4, 3)}};
    model.initialize(X);
    same_as_cpu(model, counting, X, 3);  // (the plan's: attention stages, the key transform's a branch)
    for (Entry e : {e_gemm, e_softmax_seq, e_softmax_seq_backward, e_scale_rows, e_row_dots})
        CHECK(counting[e] > 0);
    same_as_cpu(model, counting, X, 3, false);  // the layers' own path adds the key transform's gradient with copy_rows
    CHECK(counting[e_copy_rows] > 0);
    RefusingOps refusing;
    model.set_ops(refusing);
    CHECK_THROWS_WITH(model.predict(X), "refusing backend called");
}

TEST_CASE("backend: the CPU's sequence softmax and row scalars on known values", "[backend]") {
    const Ops& ops = cpu_ops();
    // sequences of lengths 2, 0, 1 over 2 columns: each column's softmax within its sequence
    float x[6] = {0.0f, 1.0f, std::log(3.0f), 1.0f, 7.0f, -2.0f};
    const std::int32_t lengths[3] = {2, 0, 1};
    ops.softmax_sequences(x, lengths, 3, 2);
    CHECK(x[0] == Approx(0.25f));
    CHECK(x[2] == Approx(0.75f));
    CHECK((x[1] == Approx(0.5f) && x[3] == Approx(0.5f)));
    CHECK((x[4] == 1.0f && x[5] == 1.0f));  // a sequence of one row: weight 1
    // backward: dx = y * (dy - sum y dy) per column and sequence
    const float dy[6] = {1, 0, 2, 0, 5, 5};
    float dx[6];
    ops.backprop_softmax_sequences(dy, x, lengths, 3, 2, dx);
    CHECK(dx[0] == Approx(0.25 * (1 - 1.75)));
    CHECK(dx[2] == Approx(0.75 * (2 - 1.75)));
    CHECK((dx[1] == Approx(0.0).margin(1e-7) && dx[4] == Approx(0.0).margin(1e-7)));
    const float X[4] = {1, 2, 3, 4}, a[2] = {2, -1};
    float Y[4] = {10, 10, 10, 10};
    ops.scale_rows(X, a, 2, 2, Y, true);
    CHECK((Y[0] == 12 && Y[1] == 14 && Y[2] == 7 && Y[3] == 6));
    ops.scale_rows(X, a, 2, 2, Y, false);
    CHECK((Y[0] == 2 && Y[1] == 4 && Y[2] == -3 && Y[3] == -4));
    float d[2];
    ops.row_dots(X, Y, 2, 2, d);
    CHECK((d[0] == 10 && d[1] == -25));
}

TEST_CASE("backend: the CPU's Cauchy similarity on known values", "[backend]") {
    const Ops& ops = cpu_ops();
    // rows (1, 2) vs (0, 0) and (3, 3) vs (3, 3), W = (1, 2): totals 1 + 2 * 4 = 9 and 0
    const float X1[4] = {1, 2, 3, 3}, X2[4] = {0, 0, 3, 3}, W[2] = {1, 2};
    float diff[4], total[2], sim[2];
    ops.cauchy_similarity(X1, X2, W, 2, 2, diff, total, sim);
    CHECK((diff[0] == 1 && diff[1] == 2 && diff[2] == 0 && diff[3] == 0));
    CHECK((total[0] == 9 && total[1] == 0));
    CHECK((sim[0] == Approx(0.1f) && sim[1] == 1.0f));
    float sim2[2];  // predict keeps nothing
    ops.cauchy_similarity(X1, X2, W, 2, 2, nullptr, nullptr, sim2);
    CHECK((sim2[0] == sim[0] && sim2[1] == sim[1]));
    // d_sim = (1, 5): d_total = -1 / (1 + total)^2 = (-0.01, -5); dX1 = 2 W d_total diff,
    // dX2 = -dX1; dW += d_total diff^2 (row 2's diff is 0: it adds nothing)
    const float d_sim[2] = {1, 5};
    float dX1[4], dX2[4], dW[2] = {10, 20};
    ops.cauchy_similarity_backward(d_sim, diff, total, W, 2, 2, dX1, dX2, dW);
    CHECK((dX1[0] == Approx(-0.02f) && dX1[1] == Approx(-0.08f) && dX1[2] == 0 && dX1[3] == 0));
    CHECK((dX2[0] == -dX1[0] && dX2[1] == -dX1[1]));
    CHECK((dW[0] == Approx(10 - 0.01f) && dW[1] == Approx(20 - 0.04f)));
}

// The run's backend entry by entry against the CPU's on random values (on the CPU's own run a
// comparison with itself): every transposition of the product with padded leading dimensions
// (the device backend's row-major -> column-major translation, and back in the host build's
// cuBLAS), scatter-adds with repeated rows and a column mask, SparseLinear's with colliding
// weights (stride 1), layer norm's backward in place.
TEST_CASE("backend: the run's backend's entries equal the CPU's", "[backend]") {
    const Ops& ops = current_ops();
    const Ops& cpu = cpu_ops();
    auto rnd = [](std::size_t n, std::uint64_t seed) {
        const Floats2d a = random_array(1, n ? n : 1, seed);
        return std::vector<float>(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(n));
    };
    // The run's backend reads and writes its own memory (a GPU's: it cannot read the host's
    // vectors); its calls get copies there, `on(v)`, read back with `back(a)`. Lengths are read
    // from the host by every backend.
    auto on = [&](const auto& v) {
        using T = typename std::decay_t<decltype(v)>::value_type;
        return to_memory(ArrayView<const T, dyn>(v.data(), {v.size()}), ops.memory());
    };
    auto back = [](const Floats1d& a) { return testing::host_floats(a.data(), a.size()); };
    SECTION("gemm, every transposition, padded leading dimensions") {
        const std::size_t m = 7, n = 5, k = 6;
        for (int ta = 0; ta < 2; ++ta)
            for (int tb = 0; tb < 2; ++tb) {
                const std::size_t lda = (ta ? m : k) + 2, ldb = (tb ? k : n) + 3, ldc = n + 1;
                const auto A = rnd((ta ? k : m) * lda, 1), B = rnd((tb ? n : k) * ldb, 2);
                auto D = rnd(m * ldc, 3);
                auto C = on(D);
                ops.gemm(ta, tb, m, n, k, 0.5f, on(A).data(), lda, on(B).data(), ldb, 0.25f, C.data(), ldc);
                cpu.gemm(ta, tb, m, n, k, 0.5f, A.data(), lda, B.data(), ldb, 0.25f, D.data(), ldc);
                CHECK(close(back(C), D));
            }
    }
    SECTION("scatter-adds with repeated rows") {
        const std::size_t width = 3, rows = 9, per = 2;
        std::vector<std::uint32_t> idx(rows * per);
        for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<std::uint32_t>((i * 5) % 4);
        const auto d = rnd(rows * width, 4), mask = rnd(width, 5);
        const auto idx_b = on(idx);
        const auto d_b = on(d), mask_b = on(mask);
        for (const bool masked : {false, true}) {
            auto U = rnd(4 * width, 6);
            auto T = on(U);
            ops.scatter_add_rows(T.data(), width, idx_b.data(), rows, per, d_b.data(), masked ? mask_b.data() : nullptr);
            cpu.scatter_add_rows(U.data(), width, idx.data(), rows, per, d.data(), masked ? mask.data() : nullptr);
            CHECK(close(back(T), U));
            Floats1d g({rows * width}, uninitialized, ops.memory());
            std::vector<float> h(rows * width);
            ops.gather_add_rows(T.data(), width, idx_b.data(), rows, per, g.data());
            cpu.gather_add_rows(U.data(), width, idx.data(), rows, per, h.data());
            CHECK(close(back(g), h));
        }
        const std::size_t nO = 3, per2 = 2, nseg = 3;
        const std::vector<std::int32_t> lengths{2, 0, 3};
        std::vector<std::uint32_t> sidx(5 * per2);
        for (std::size_t i = 0; i < sidx.size(); ++i) sidx[i] = static_cast<std::uint32_t>((i * 3) % 5);
        const auto values = rnd(5, 7), dY = rnd(nseg * nO, 8), W = rnd(5 * nO + 3, 9);
        const auto sidx_b = on(sidx);
        const auto values_b = on(values), dY_b = on(dY), W_b = on(W);
        for (std::size_t stride : {std::size_t{1}, std::size_t{5}}) {
            auto dW2 = rnd(5 * nO + 3, 10);
            auto dW = on(dW2);
            Floats1d dv({5}, ops.memory());
            std::vector<float> dv2(5);
            ops.sparse_scatter_add(dW.data(), nO, stride, sidx_b.data(), per2, values_b.data(), lengths.data(), nseg,
                                   dY_b.data(), W_b.data(), dv.data());
            cpu.sparse_scatter_add(dW2.data(), nO, stride, sidx.data(), per2, values.data(), lengths.data(), nseg,
                                   dY.data(), W.data(), dv2.data());
            CHECK(close(back(dW), dW2));
            CHECK(close(back(dv), dv2));
            auto Y2 = rnd(nseg * nO, 11);
            auto Y = on(Y2);
            ops.sparse_gather_add(dW.data(), nO, stride, sidx_b.data(), per2, values_b.data(), lengths.data(), nseg,
                                  Y.data());
            cpu.sparse_gather_add(dW2.data(), nO, stride, sidx.data(), per2, values.data(), lengths.data(), nseg,
                                  Y2.data());
            CHECK(close(back(Y), Y2));
        }
    }
    SECTION("Cauchy similarity, forward and backward, many rows into one dW") {
        const std::size_t rows = 9, n = 7;
        const auto X1 = rnd(rows * n, 30), X2 = rnd(rows * n, 31), W = rnd(n, 32), d_sim = rnd(rows, 33);
        Floats1d diff1({rows * n}, ops.memory()), t1({rows}, ops.memory()), s1({rows}, ops.memory());
        std::vector<float> diff2(rows * n), t2(rows), s2(rows);
        const auto W_b = on(W);
        ops.cauchy_similarity(on(X1).data(), on(X2).data(), W_b.data(), rows, n, diff1.data(), t1.data(), s1.data());
        cpu.cauchy_similarity(X1.data(), X2.data(), W.data(), rows, n, diff2.data(), t2.data(), s2.data());
        CHECK((close(back(diff1), diff2) && close(back(t1), t2) && close(back(s1), s2)));
        Floats1d a1({rows * n}, ops.memory()), b1({rows * n}, ops.memory());
        std::vector<float> a2(rows * n), b2(rows * n);
        auto dW2 = rnd(n, 34);
        auto dW1 = on(dW2);
        ops.cauchy_similarity_backward(on(d_sim).data(), on(diff2).data(), on(t2).data(), W_b.data(), rows, n,
                                       a1.data(), b1.data(), dW1.data());
        cpu.cauchy_similarity_backward(d_sim.data(), diff2.data(), t2.data(), W.data(), rows, n, a2.data(), b2.data(),
                                       dW2.data());
        CHECK((close(back(a1), a2) && close(back(b1), b2) && close(back(dW1), dW2)));
    }
    SECTION("layer norm's backward in place, bias gradients") {
        const std::size_t rows = 6, n = 5;
        const auto X = rnd(rows * n, 12), G = rnd(n, 13), b = rnd(n, 14), dY = rnd(rows * n, 15);
        std::vector<float> xh(rows * n), rs(rows), Y(rows * n);
        cpu.layernorm(X.data(), Y.data(), rows, n, G.data(), b.data(), xh.data(), rs.data());
        auto d2 = dY, dG2 = rnd(n, 16), db2 = rnd(n, 17);
        auto d1 = on(d2), dG1 = on(dG2), db1 = on(db2);
        ops.layernorm_backward(d1.data(), d1.data(), on(xh).data(), on(rs).data(), rows, n, on(G).data(), dG1.data(),
                               db1.data());
        cpu.layernorm_backward(d2.data(), d2.data(), xh.data(), rs.data(), rows, n, G.data(), dG2.data(), db2.data());
        CHECK(close(back(d1), d2));
        CHECK(close(back(dG1), dG2));
        CHECK(close(back(db1), db2));
        const auto dY_b = on(dY);
        ops.sum_rows_into(dY_b.data(), rows, n, db1.data());
        cpu.sum_rows_into(dY.data(), rows, n, db2.data());
        CHECK(close(back(db1), db2));
        CHECK(ops.sum_squares(dY_b.data(), dY.size()) == Approx(cpu.sum_squares(dY.data(), dY.size())).epsilon(1e-6));
    }
}
