// The CUDA backend on a GPU (checked only on a GPU: docs/cuda.md): a few entries against the
// CPU backend's on managed memory, the products with every transposition. Without a GPU it
// exits 77 (meson's skip). The whole suite on a GPU is `make test-gpu` (TENON_TEST_OPS=cuda).
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "tenon/backend/device.hpp"

namespace {
float* managed(std::size_t n) {
    void* p = nullptr;
    if (cudaMallocManaged(&p, (n ? n : 1) * sizeof(float)) != cudaSuccess) std::abort();
    return static_cast<float*>(p);
}
float worst(const float* a, const std::vector<float>& b) {
    float w = 0.0f;
    for (std::size_t i = 0; i < b.size(); ++i) w = std::fmax(w, std::fabs(a[i] - b[i]));
    return w;
}
}  // namespace

int main() {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        std::puts("no CUDA device: skipped");
        return 77;
    }
    const tenon::Ops& gpu = tenon::cuda_ops();
    const tenon::Ops& cpu = tenon::cpu_ops();
    int failed = 0;
    const std::size_t m = 37, n = 19, k = 23;
    for (int ta = 0; ta < 2; ++ta)
        for (int tb = 0; tb < 2; ++tb) {
            const std::size_t lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + 1, ldc = n + 2;
            float* A = managed((ta ? k : m) * lda);
            float* B = managed((tb ? n : k) * ldb);
            float* C = managed(m * ldc);
            for (std::size_t i = 0; i < (ta ? k : m) * lda; ++i) A[i] = std::sin(float(i));
            for (std::size_t i = 0; i < (tb ? n : k) * ldb; ++i) B[i] = std::cos(float(i));
            for (std::size_t i = 0; i < m * ldc; ++i) C[i] = 0.5f;
            std::vector<float> want(C, C + m * ldc);
            cpu.gemm(ta, tb, m, n, k, 0.7f, A, lda, B, ldb, 0.3f, want.data(), ldc);
            gpu.gemm(ta, tb, m, n, k, 0.7f, A, lda, B, ldb, 0.3f, C, ldc);
            const float w = worst(C, want);
            std::printf("gemm ta=%d tb=%d: max |gpu - cpu| = %g\n", ta, tb, double(w));
            failed += !(w <= 1e-5f);
            cudaFree(A);
            cudaFree(B);
            cudaFree(C);
        }
    std::printf("%s\n", failed ? "FAILED" : "passed");
    return failed ? 1 : 0;
}
