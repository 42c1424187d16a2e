// The device backend (docs/cuda.md): one source, compiled twice. With nvcc (kernels/device_ops.cu,
// src/device/cuda_glue.cpp) its passes are Thrust algorithms on a CUDA GPU and its products
// cuBLAS; with g++ (src/device/host_ops.cpp) the same passes run on Thrust's CPP device system
// and the products go through a host cuBLAS with cuBLAS's signature and column-major
// semantics (blas.hpp), so the whole test suite checks this code without a GPU.
// TENON_DEVICE_NS names the build (device_host, device_cuda): both may be linked into one program.
//
// This header and device_ops.inl include only backend/ops.hpp (the functors): what nvcc sees
// stays small. A plan's stage is turned into the POD RowPass by device_stage.inl (g++), so the
// plan's headers never reach nvcc.
#pragma once
#include <cstddef>
#include <cstdint>

#include "tenon/backend/ops.hpp"

// The first statement of every backend entry: in the host build, the strict device-host mode's
// backend scope (device memory accessible while it runs: tenon/types/device_memory.hpp); nothing
// under nvcc, whose host code never sees the device's memory. TENON_DEVICE_ARG(p, host|device):
// in the strict mode, an integer argument must be in that memory (the passes read indices and
// write `which` on the device; lengths are the host's), as it must on a GPU.
#if defined(TENON_DEVICE_CUDA)
#define TENON_DEVICE_ENTRY static_cast<void>(0)
#define TENON_DEVICE_ARG(p, where) static_cast<void>(0)
#else
#include "tenon/types/device_memory.hpp"
#define TENON_DEVICE_ENTRY const ::tenon::detail::StrictBackend tenon_strict_backend_
#define TENON_DEVICE_ARG(p, where) ::tenon::detail::strict_expect(p, ::tenon::Memory::where, #p, __func__)
#endif

#ifndef TENON_DEVICE_NS
#error "define TENON_DEVICE_NS (device_host or device_cuda) before including device_ops.hpp"
#endif

namespace tenon::TENON_DEVICE_NS {

// A plan's fused row pass of one stage, resolved to pointers (lowering::Stage, StageParams and
// Ctx as the CPU backend reads them). Copied by value into each pass's functor.
inline constexpr std::size_t max_row_ops = 8;  // lowering::max_ops
enum class RowPrim : std::uint8_t { none, dense, maxout, other };
enum class RowOpKind : std::uint8_t { layernorm, dropout, sigmoid, add };  // lowering::OpKind
struct RowOp {
    RowOpKind kind = RowOpKind::add;
    float* save = nullptr;         // LN's Xhat, dropout's mask, sigmoid's output
    float* rstd = nullptr;         // LN's 1/std per row
    const float* skip = nullptr;   // add: the rows added (forward)
    float* skipg = nullptr;        // add: their gradient (backward; null: not wanted)
    bool grad_assign = false;
    const float* G = nullptr;
    const float* b = nullptr;
    float* dG = nullptr;
    float* db = nullptr;
    bool on = false, all = false;  // dropout
    std::uint64_t key = 0, kt = 0; // dropout: the call's key, the threshold (fn::dropout_mask_bits)
    std::uint32_t kb = 0;          // dropout: the bits of the kept value
};
struct RowPass {
    RowPrim prim = RowPrim::none;
    Activation act = Activation::identity;
    bool bias_done = false;  // dense: the product's epilogue added the bias and applied act (gemm_bias_act)
    bool softmax = false, normalize = true, act_needs_y = false, train = false, dx_assign = true;
    float k = 1.0f;
    std::size_t n = 0, nP = 1, rows = 0;
    // forward
    float* O = nullptr;
    const float* in = nullptr;
    const float* zs = nullptr;
    float* ysave = nullptr;
    float* zsave = nullptr;
    std::int32_t* which = nullptr;
    const float* b = nullptr;
    // backward
    float* db = nullptr;
    const float* dY = nullptr;
    float* dz = nullptr;
    float* tmp = nullptr;  // the plan's one-row scratch (unused: the device pass needs rows of it)
    float* gin = nullptr;
    std::size_t nops = 0;
    RowOp ops[max_row_ops];
};

class DeviceOps final : public Ops {
public:
    DeviceOps() noexcept : Ops(Memory::device) {}
    const char* name() const noexcept override;
    void gemm(bool ta, bool tb, std::size_t m, std::size_t n, std::size_t k, float alpha, const float* a,
              std::size_t lda, const float* b, std::size_t ldb, float beta, float* c, std::size_t ldc) const override;
    // cuBLASLt's BIAS / RELU_BIAS epilogue (identity and relu; others: false).
    bool gemm_bias_act(Activation act, std::size_t m, std::size_t n, std::size_t k, const float* X, const float* W,
                       const float* Wp, const float* b, float* Y) const override;
    // Whether gemm_bias_act takes this product (the run then marks the stage's
    // StageParams::bias_act_done, and stage_forward_rows skips the bias and activation).
    static bool takes_bias_act(Activation act, std::size_t m, std::size_t n, std::size_t k) noexcept {
        return (act == Activation::identity || act == Activation::relu) && m > 0 && n > 0 && k > 0;
    }
    void bias_activate(Activation act, float* Y, const float* b, std::size_t rows, std::size_t n,
                       float* Z) const override;
    void activate(Activation act, const float* X, float* Y, std::size_t n) const override;
    void activation_backward(Activation act, float* d, const float* Y, const float* Z, std::size_t rows,
                             std::size_t n) const override;
    void softmax_rows(float* Y, std::size_t rows, std::size_t n, float inv_t) const override;
    void scale(float* x, std::size_t n, float k) const override;
    void sum_rows_into(const float* d, std::size_t rows, std::size_t n, float* db) const override;
    void maxout(const float* Z, const float* b, std::size_t rows, std::size_t nO, std::size_t nP, float* Y,
                std::int32_t* which) const override;
    void maxout_backward(const float* dY, const std::int32_t* which, std::size_t rows, std::size_t nO, std::size_t nP,
                         float* dZ) const override;
    void layernorm(const float* X, float* Y, std::size_t rows, std::size_t n, const float* G, const float* b,
                   float* Xhat, float* rstd) const override;
    void layernorm_backward(const float* dY, float* dX, const float* Xhat, const float* rstd, std::size_t rows,
                            std::size_t n, const float* G, float* dG, float* db) const override;
    void gather_add_rows(const float* table, std::size_t width, const std::uint32_t* idx, std::size_t rows,
                         std::size_t per, float* out) const override;
    void scatter_add_rows(float* table, std::size_t width, const std::uint32_t* idx, std::size_t rows,
                          std::size_t per, const float* d, const float* mask) const override;
    void sparse_gather_add(const float* W, std::size_t nO, std::size_t stride, const std::uint32_t* idx,
                           std::size_t per, const float* values, const std::int32_t* lengths, std::size_t nseg,
                           float* Y) const override;
    void sparse_scatter_add(float* dW, std::size_t nO, std::size_t stride, const std::uint32_t* idx,
                            std::size_t per, const float* values, const std::int32_t* lengths, std::size_t nseg,
                            const float* dY, const float* W, float* dvalues) const override;
    void segment_reduce(Reduce red, const float* X, const std::int32_t* lengths, std::size_t nseg, std::size_t n,
                        float* Y, std::int32_t* which) const override;
    void segment_reduce_backward(Reduce red, const float* dY, const std::int32_t* lengths, std::size_t nseg,
                                 std::size_t n, const std::int32_t* which, float* dX) const override;
    void seq2col(const float* X, const std::int32_t* lengths, std::size_t nseg, std::size_t nW, std::size_t n,
                 float* out) const override;
    void backprop_seq2col(const float* dY, const std::int32_t* lengths, std::size_t nseg, std::size_t nW,
                          std::size_t n, float* dX) const override;
    void softmax_sequences(float* x, const std::int32_t* lengths, std::size_t nseg, std::size_t n) const override;
    void backprop_softmax_sequences(const float* dY, const float* Y, const std::int32_t* lengths, std::size_t nseg,
                                    std::size_t n, float* dX) const override;
    void scale_rows(const float* X, const float* a, std::size_t rows, std::size_t n, float* Y,
                    bool add) const override;
    void row_dots(const float* A, const float* B, std::size_t rows, std::size_t n, float* out) const override;
    void cauchy_similarity(const float* X1, const float* X2, const float* W, std::size_t rows, std::size_t n,
                           float* diff, float* total, float* sim) const override;
    void cauchy_similarity_backward(const float* d_sim, const float* diff, const float* total, const float* W,
                                    std::size_t rows, std::size_t n, float* dX1, float* dX2,
                                    float* dW) const override;
    void copy_rows(const float* from, std::size_t from_ld, float* to, std::size_t to_ld, std::size_t rows,
                   std::size_t w, bool add) const override;
    void zero(float* x, std::size_t n) const override;
    void elementwise(Binary op, const float* a, const float* b, float* y, std::size_t n) const override;
    void axpy(float alpha, const float* x, float* y, std::size_t n) const override;
    void mask_columns(const float* X, const float* mask, std::size_t rows, std::size_t n, float* Y) const override;
    void dropout_mask_bits(std::uint64_t key, float* m, std::size_t n, std::uint64_t kt,
                           std::uint32_t kb) const override;
    void lstm_cell_forward(float* G, const float* Cprev, float* C, float* H, std::size_t ldh, std::size_t rows,
                           std::size_t nH) const override;
    void lstm_cell_backward(const float* dH, std::size_t ldh, const float* dC, const float* G, const float* C,
                            const float* Cprev, float* dG, float* dCprev, std::size_t rows,
                            std::size_t nH) const override;
    void stage_forward_rows(const lowering::Stage& s, const lowering::StageParams& sp,
                            const lowering::Ctx& c) const override;  // device_stage.inl
    void stage_backward_rows(const lowering::Stage& s, const lowering::StageParams& sp,
                             const lowering::Ctx& c) const override;  // device_stage.inl
    void adam(float* W, float* G, float* m1, float* m2, float* A, std::size_t n, float gscale, float b1, float b2,
              float lr_t, float eps, float decay_keep, float wd, bool zero_g) const override;
    void sgd(float* W, float* G, float* A, std::size_t n, float gscale, float lr, float decay_keep, float wd,
             bool zero_g) const override;
    double sum_squares(const float* x, std::size_t n) const override;
    std::size_t count_nonfinite(const float* x, std::size_t n) const override;
    // The optimizer over every parameter of a model in one pass (one launch): the segments'
    // table goes to the device, each value finds its segment by binary search over the starts.
    bool fuses_optimizer() const noexcept override { return true; }
    void adam_segments(const OptSegment* segs, std::size_t count, float b1, float b2, float eps,
                       float wd) const override;
    void sgd_segments(const OptSegment* segs, std::size_t count, float wd) const override;

    // The row passes of a resolved stage (device_ops.inl).
    void rows_forward(const RowPass& p) const;
    void rows_backward(const RowPass& p) const;
};

// Device memory for the backend's own tables (the fused optimizer's segments): a copy of
// `bytes` of host memory in the device allocator's memory, and its release (upload.inl, g++).
void* device_upload(const void* host, std::size_t bytes, std::size_t& capacity);
void device_release(void* p, std::size_t capacity) noexcept;

#if defined(TENON_DEVICE_CUDA)
}  // namespace tenon::TENON_DEVICE_NS
namespace tenon::detail {
struct DeviceMemoryProvider;
}
namespace tenon::TENON_DEVICE_NS {
// The GPU's memory for the device allocator (cuda_memory.cpp: cudaMallocAsync, cudaMemcpyAsync).
const detail::DeviceMemoryProvider& cuda_memory() noexcept;
// Whether device blocks are managed memory (TENON_CUDA_MANAGED=1: the test suite's GPU run).
bool cuda_managed_memory() noexcept;
// Managed memory: called as a device model's outermost call opens (false) and closes (true);
// at the close it waits for the device, so that host code reads the call's results complete.
void cuda_managed_access(bool host_may_touch) noexcept;
#endif

// The build's cuBLAS and cuBLASLt handles (one per host thread; null in the host build).
void* blas_handle();
void* lt_handle();
// Throws tenon's error for a failed cuBLAS call (status: its cublasStatus_t).
[[noreturn]] void blas_failed(int status);

}  // namespace tenon::TENON_DEVICE_NS
