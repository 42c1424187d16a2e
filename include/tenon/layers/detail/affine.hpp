// The matrix products shared by the dense layers (Linear, Relu, Sigmoid, Mish, Softmax,
// Maxout): Y = X W^T + b forward; db += sum(dY), dW += dY^T X, dX = dY W backward.
#pragma once
#include <cstddef>

#include "tenon/backend/cpu/gemm.hpp"
#include "tenon/types/array.hpp"

namespace tenon::detail {

// Y (rows, nO) = X (rows, nI) * W^T (W is (nO, nI)), then + b on every row.
inline void affine_forward(Floats2dCView X, const float* W, const float* b, std::size_t nO, float* Y) {
    const std::size_t rows = X.shape(0), nI = X.shape(1);
    cpu::sgemm(false, true, rows, nO, nI, 1.0f, X.data(), nI, W, nI, 0.0f, Y, nO);
    for (std::size_t r = 0; r < rows; ++r) {
        float* y = Y + r * nO;
        for (std::size_t o = 0; o < nO; ++o) y[o] += b[o];
    }
}

// Given dZ (rows, nO), the gradient of the affine output: adds to dW and db, and writes
// dX (rows, nI) unless dX is null.
inline void affine_backward(const float* dZ, Floats2dCView X, const float* W, std::size_t nO, float* dW, float* db,
                            float* dX) {
    const std::size_t rows = X.shape(0), nI = X.shape(1);
    for (std::size_t r = 0; r < rows; ++r) {
        const float* d = dZ + r * nO;
        for (std::size_t o = 0; o < nO; ++o) db[o] += d[o];
    }
    cpu::sgemm(true, false, nO, nI, rows, 1.0f, dZ, nO, X.data(), nI, 1.0f, dW, nI);
    if (dX) cpu::sgemm(false, false, rows, nI, nO, 1.0f, dZ, nO, W, nI, 0.0f, dX, nI);
}

}  // namespace tenon::detail
