// ParametricAttention's math and checks (include/tenon/layers/parametricattention.hpp),
// compiled once: the same functions serve every width and key transform type.
#include <string>

#include "tenon/layers/parametricattention.hpp"
#include "tenon/random.hpp"

namespace tenon::detail {

void attention_forward(const Ops& ops, const float* X, const float* K, const float* Q, const std::int32_t* lengths,
                       std::size_t nseg, std::size_t rows, std::size_t n, float* a, float* Y) {
    if (rows == 0) return;  // an empty batch, or sequences of no rows: nothing to weigh
    ops.gemm(false, false, rows, 1, n, 1.0f, K, n, Q, 1, 0.0f, a, 1);  // the scores K Q
    ops.softmax_sequences(a, lengths, nseg, 1);
    ops.scale_rows(X, a, rows, n, Y, false);
}

void attention_backward(const Ops& ops, const float* dY, const float* X, const float* K, const float* Q,
                        const float* a, const std::int32_t* lengths, std::size_t nseg, std::size_t rows,
                        std::size_t n, float* dX, float* dQ, float* dK, float* d_a, bool dx_add) {
    if (rows == 0) return;
    Floats1d own;
    if (!d_a) {
        own = Floats1d({rows}, uninitialized);
        d_a = own.data();
    }
    ops.scale_rows(dY, a, rows, n, dX, dx_add);  // through Y = X * a, to X
    ops.row_dots(X, dY, rows, n, d_a);  // ... and to a
    ops.backprop_softmax_sequences(d_a, a, lengths, nseg, 1, d_a);  // to the scores
    ops.gemm(true, false, n, 1, rows, 1.0f, K, n, d_a, 1, 1.0f, dQ, 1);   // dQ += K^T d_a
    // dK = d_a Q^T: into dX itself where the keys are X, else for the key transform's backprop
    if (dK) ops.gemm(false, false, rows, n, 1, 1.0f, d_a, 1, Q, n, 0.0f, dK, n);
    else ops.gemm(false, false, rows, n, 1, 1.0f, d_a, 1, Q, n, 1.0f, dX, n);
}

void attention_stage_scratch(const Node*, bool, std::size_t& per_row, std::size_t& fixed) {
    per_row = 1;  // predict: the weights a; training: d_a besides
    fixed = 0;
}

void attention_stage_forward(Node* layer, const lowering::SeqCall& c) {
    const std::size_t n = layer->get_dim("nO");
    attention_forward(*c.ops, c.x, c.k, layer->get_param("Q").data, c.lengths, c.nseg, c.rows, n, c.scratch, c.y);
}

void attention_stage_backward(Node* layer, const lowering::SeqCall& c) {
    const std::size_t n = layer->get_dim("nO");
    float* dQ = layer->get_grad("Q").data;
    const float* Q = layer->get_param("Q").data;
    if (c.dx) {
        attention_backward(*c.ops, c.dy, c.x, c.k, Q, c.scratch, c.lengths, c.nseg, c.rows, n, c.dx, dQ, c.dk,
                           c.train_scratch, c.dx_add);
        return;
    }
    // The input's gradient is not wanted (the plan's first stage, params_only): dQ (and dK) alone.
    if (c.rows == 0) return;
    float* d_a = c.train_scratch;
    c.ops->row_dots(c.x, c.dy, c.rows, n, d_a);
    c.ops->backprop_softmax_sequences(d_a, c.scratch, c.lengths, c.nseg, 1, d_a);
    c.ops->gemm(true, false, n, 1, c.rows, 1.0f, c.k, n, d_a, 1, 1.0f, dQ, 1);
    if (c.dk) c.ops->gemm(false, false, c.rows, n, 1, 1.0f, d_a, 1, Q, n, 0.0f, c.dk, n);
}

void attention_init_q(float* Q, std::size_t n) {
    Rng& rng = global_rng();
    for (std::size_t i = 0; i < n; ++i) Q[i] = static_cast<float>(rng.uniform(-0.1, 0.1));
}

void check_attention_key_dims(const Node& layer, const Node& key, std::size_t n) {
    for (const char* dim : {"nI", "nO"})
        if (key.has_dim(dim) && key.get_dim(dim) != n)
            throw ShapeError(layer.name() + ": its key transform, " + key.name() + ", must map width nO = " +
                                 std::to_string(n) + " to width " + std::to_string(n) + ", but its " + dim + " is " +
                                 std::to_string(key.get_dim(dim)),
                             "tenon-E272");
}

void check_attention_keys(const Node& layer, const Node& key, std::size_t rows, std::size_t n, std::size_t found_rows,
                          std::size_t found_cols) {
    throw ShapeError(layer.name() + ": its key transform, " + key.name() + ", must give one key of width nO per row: " +
                         "expected (" + std::to_string(rows) + ", " + std::to_string(n) + ") but found (" +
                         std::to_string(found_rows) + ", " + std::to_string(found_cols) + ")",
                     "tenon-E272");
}

void check_attention_gradient(const Node& layer, const Ints1d& lengths, std::size_t n, const Ragged& dY) {
    bool same = dY.size() == lengths.size() && dY.data().shape(1) == n;
    for (std::size_t i = 0; same && i < lengths.size(); ++i) same = dY.lengths()[i] == lengths[i];
    if (same) return;
    auto lengths_str = [](const Ints1d& l) {
        std::string s = "[";
        for (std::size_t i = 0; i < l.size(); ++i) {
            if (i) s += ", ";
            s += std::to_string(l[i]);
        }
        return s + "]";
    };
    throw ShapeError(layer.name() + ": backprop: expected a gradient shaped like the output, lengths " +
                         lengths_str(lengths) + " of width " + std::to_string(n) + ", but found lengths " +
                         lengths_str(dY.lengths()) + " of width " + std::to_string(dY.data().shape(1)),
                     "tenon-E273");
}

}  // namespace tenon::detail
