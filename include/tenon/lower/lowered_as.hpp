// How lower() fuses a layer: each layer that the plan fuses says so in its own header, with
//   static constexpr lowering::DenseStage lowered_as{"relu", /*backward_reads_y=*/true};
// (or MaxoutStage, RowOpStage). lower.hpp reads the declaration and knows no layer type by
// name: adding a layer that fuses is one header. A layer without a declaration becomes a
// "layer" stage that runs its own predict / forward. This header is light on purpose: every
// layer header includes it.
#pragma once
#include <cstdint>

namespace tenon::lowering {

// The operations of a stage's row pass (plan.hpp's Op); `add` is residual's.
enum class OpKind : std::uint8_t { layernorm, dropout, sigmoid, add };

// A dense layer (Linear, Relu, Sigmoid, Mish, Softmax): a matrix product with W (nO, nI),
// then one pass over each row: bias and the layer's own activate() (its
// activate_backward() in the backward pass), then its LayerNorm / Dropout children.
struct DenseStage {
    const char* name;
    bool backward_reads_y = false;  // activate_backward reads the output Y
    bool softmax = false;           // the activation is a softmax over the row (Softmax's)
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

}  // namespace tenon::lowering
