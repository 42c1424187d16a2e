// How lower() fuses a layer: each layer that the plan fuses says so in its own header, with
//   static constexpr lowering::DenseStage lowered_as{"relu", Activation::relu};
// (or MaxoutStage, RowOpStage). lower.hpp reads the declaration and knows no layer type by
// name: adding a layer that fuses is one header. A layer without a declaration becomes a
// "layer" stage that runs its own predict / forward. This header is light on purpose: every
// layer header includes it.
#pragma once
#include <cstddef>
#include <cstdint>

#include "tenon/backend/functors.hpp"

namespace tenon {
class Node;
class Ops;
}  // namespace tenon

namespace tenon::lowering {

// The operations of a stage's row pass (plan.hpp's Op); `add` is residual's.
enum class OpKind : std::uint8_t { layernorm, dropout, sigmoid, add };

// A dense layer (Linear, Relu, Sigmoid, Mish, Gelu, Swish, HardSwish, Softmax): a matrix product with W (nO, nI),
// then one pass over each row: bias and the activation (one of the shared functors,
// backend/functors.hpp, which the layer's own forward uses too), an optional softmax over
// the row, then its LayerNorm / Dropout children.
struct DenseStage {
    const char* name;
    Activation act = Activation::identity;
    bool softmax = false;  // then a softmax over the row (Softmax's, with its temperature)
};
// Maxout: the product with W (nO * nP, nI), the largest piece per output, then the tail.
struct MaxoutStage {
    const char* name;
};
// A layer that is one elementwise operation (LayerNorm, Dropout, sigmoid_activation): it
// joins the row pass of the stage before it.
struct RowOpStage {
    OpKind op;
};

// The layers and combinators of sequence models (docs/lowering.md, "Sequence models"):
// An embedding table (Embed, HashEmbed): `per` rows of E summed for each row of ids; the
// keys come from the layer's static table_keys (its own hashing / range checks).
struct TableStage {
    const char* name;
    unsigned per;
};
// expand_window: seq2col over the rows (the layer's window(); per sequence for Ragged).
struct WindowStage {};
// A transfer that only regroups the same rows (list2ragged, ragged2list, noop): no stage.
struct SameRows {};
// with_array: its layer runs on the rows (with pad: on the rows with pad zero rows around
// each sequence, a padded space), its plan_rows says whether the kind of input allows it.
struct OnRows {};
// How an OnRows wrapper over a Padded takes it (its plan_padded; none where it has none):
// steps: its layer runs on the Padded's (T, B) rows, padding rows included (with_array over a
// Padded, as Thinc's with_array2d: the plan's steps space); rows: it reads the sequences' rows
// and gives a Padded of zero padding (with_ragged, with_list over a Padded); keep: its layer
// takes the Padded as it is (with_padded over a Padded).
enum class PaddedRows : std::uint8_t { none, steps, rows, keep };
template <class L>
constexpr PaddedRows plan_padded_of() {
    if constexpr (requires { L::plan_padded; }) return L::plan_padded;
    else return PaddedRows::none;
}
// A Padded (BasicPadded<A>): in the plan, on the steps space or on the sequences' own rows.
template <class T>
concept padded_data = requires(const T& t) {
    t.size_at_t();
    t.indices();
};
// concatenate: every branch reads the same boundary, a concat stage joins their columns;
// add (sum): the same branches, the concat stage sums them (equal widths) instead.
struct ConcatBranches {
    bool sum = false;
};
// clone: the copies one after the other.
struct CloneCopies {};
// bidirectional: l2r on the sequences; r2l between two reverse stages (each sequence's rows
// in reverse order within its length: on a Padded's steps rows its padding rows stay where
// they are); a concat stage joins their columns.
struct BidirectionalBranches {};
// A reduction over a Ragged (reduce_mean, reduce_sum, reduce_max, reduce_first, reduce_last):
// one row per sequence (the plan's "docs" space); the layer's `kind` (fn::segment_reduce_one)
// says what it computes, its `nonempty` / `why_nonempty` when a sequence needs a row.
struct ReduceStage {};

// A layer over the input's sequences whose work is its own non-template code (src/*.cpp),
// run by the plan with every buffer it needs carved from the workspace (LSTM on the
// sequences' rows under with_padded, ParametricAttention): a "seq" stage. The rows are the
// plan's input rows (every sequence's, back to back, in the input's order); `lengths` the
// input's sequences.
struct SeqCall {
    const Ops* ops = nullptr;
    const std::int32_t* lengths = nullptr;
    std::size_t nseg = 0, rows = 0;
    bool train = false;
    const float* x = nullptr;   // rows x nI
    const float* k = nullptr;   // the keys (rows x nI) where the layer reads a second input
    float* y = nullptr;         // rows x nO (forward)
    const float* dy = nullptr;  // rows x nO (backward)
    float* dx = nullptr;        // rows x nI (backward; null: not wanted)
    bool dx_add = false;        // add to dx (another stage wrote it first), else assign
    float* dk = nullptr;        // the keys' gradient (assigned)
    float* scratch = nullptr;   // scratch(rows, false) floats, kept from forward to backward
    float* train_scratch = nullptr;  // training: the rest of scratch(rows, true), same lifetime
    const std::int32_t* ids = nullptr;  // a layer that reads the plan's ids (reads_ids): rows x cols
    std::size_t cols = 0;
    // seq_host_words words of host memory, zero at the forward's start, kept from the forward to
    // the backward (the call's state): what the stage's host code reads back (a flag, a count),
    // where the scratch is the backend's memory and the host does not read it.
    std::uint64_t* host = nullptr;
};
inline constexpr std::size_t seq_host_words = 2;
struct SeqLayerStage {
    const char* name;
    // The floats a call of `rows` rows needs: per_row * r + fixed (r: rows rounded up to 16),
    // for predict (train false) and for a training forward + backward (train true: in addition).
    void (*scratch)(const Node* layer, bool train, std::size_t& per_row, std::size_t& fixed);
    void (*forward)(Node* layer, const SeqCall& c);
    // Adds to the layer's gradients, writes dx (and dk); reads what forward left in the scratch.
    void (*backward)(Node* layer, const SeqCall& c);
    bool reads_ids = false;  // its input is the plan's ids (Ints2d: StaticVectors), not floats
};

}  // namespace tenon::lowering
