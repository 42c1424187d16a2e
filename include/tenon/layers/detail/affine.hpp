// The matrix products shared by the dense layers (Linear, Relu, Sigmoid, Mish, Gelu, Swish,
// HardSwish, Softmax, Maxout), on the layer's backend: Y = X W^T + b forward; db += sum(dY),
// dW += dY^T X, dX = dY W backward.
#pragma once
#include <cstddef>

#include "tenon/backend/ops.hpp"
#include "tenon/types/array.hpp"

namespace tenon::detail {

// Y (rows, nO) = X (rows, nI) * W^T (W is (nO, nI)), without the bias.
inline void affine_product(const Ops& ops, Floats2dCView X, const float* W, std::size_t nO, float* Y) {
    const std::size_t rows = X.shape(0), nI = X.shape(1);
    ops.gemm(false, true, rows, nO, nI, 1.0f, X.data(), nI, W, nI, 0.0f, Y, nO);
}

// Given dZ (rows, nO), the gradient of the affine output: adds to dW and db, and writes
// dX (rows, nI) unless dX is null.
inline void affine_backward(const Ops& ops, const float* dZ, Floats2dCView X, const float* W, std::size_t nO, float* dW,
                            float* db, float* dX) {
    const std::size_t rows = X.shape(0), nI = X.shape(1);
    ops.sum_rows_into(dZ, rows, nO, db);
    ops.gemm(true, false, nO, nI, rows, 1.0f, dZ, nO, X.data(), nI, 1.0f, dW, nI);
    if (dX) ops.gemm(false, false, rows, nI, nO, 1.0f, dZ, nO, W, nI, 0.0f, dX, nI);
}

}  // namespace tenon::detail
