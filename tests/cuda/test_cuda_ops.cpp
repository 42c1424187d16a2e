// The CUDA backend on a GPU (checked only on a GPU: docs/cuda.md): a few entries against the
// CPU backend's on managed memory, the products with every transposition; then the memory of
// the suite's GPU run: with TENON_CUDA_MANAGED=1 device arrays are managed memory, so that the
// tests' own code may fill and read them on the host, and a device model's call waits for the
// device when it returns: a model moved to the GPU predicts and trains on an input filled on the
// host, its results read on the host without a copy, against the same model on the CPU. Without
// a GPU it exits 77 (meson's skip). The whole suite on a GPU is `make test-gpu`
// (TENON_TEST_OPS=cuda).
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "tenon/backend/device.hpp"
#include "tenon/tenon.hpp"

namespace {
float* managed(std::size_t n) {
    void* p = nullptr;
    if (cudaMallocManaged(&p, (n ? n : 1) * sizeof(float)) != cudaSuccess) std::abort();
    return static_cast<float*>(p);
}
float worst(const float* a, const float* b, std::size_t n) {
    float w = 0.0f;
    for (std::size_t i = 0; i < n; ++i) w = std::fmax(w, std::fabs(a[i] - b[i]));
    return w;
}
}  // namespace

int main() {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        std::puts("no CUDA device: skipped");
        return 77;
    }
    ::setenv("TENON_CUDA_MANAGED", "1", 1);  // (before the first device allocation)
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
            const float w = worst(C, want.data(), want.size());
            std::printf("gemm ta=%d tb=%d: max |gpu - cpu| = %g\n", ta, tb, double(w));
            failed += !(w <= 1e-5f);
            cudaFree(A);
            cudaFree(B);
            cudaFree(C);
        }

    // The suite's GPU run: a model on managed device memory.
    using namespace tenon;
    auto cpu_model = Relu<32>() >> Softmax<5>();
    Floats2d X({64, 12}, uninitialized);
    for (std::size_t i = 0; i < X.size(); ++i) X.data()[i] = std::sin(0.37f * float(i));
    cpu_model.initialize(X);
    auto gpu_model = cpu_model;
    to_gpu(gpu_model, gpu);

    // The input made as device memory and filled on the host (what the suite's random inputs do).
    Floats2d Xd({64, 12}, uninitialized, Memory::device);
    for (std::size_t i = 0; i < X.size(); ++i) Xd.data()[i] = X.data()[i];
    const Floats2d P = gpu_model.predict(Xd), Pc = cpu_model.predict(X);
    failed += P.memory() != Memory::device;
    std::printf("predict: max |gpu - cpu| = %g\n", double(worst(P.data(), Pc.data(), P.size())));
    failed += !(worst(P.data(), Pc.data(), P.size()) <= 1e-5f);

    Optimizer og = Adam(0.01), oc = Adam(0.01);
    for (int step = 0; step < 3; ++step) {
        auto [Y, bp] = gpu_model.begin_update(Xd);
        auto [Yc, bpc] = cpu_model.begin_update(X);
        Floats2d dY({64, 5}, uninitialized, Memory::device), dYc({64, 5}, uninitialized);
        for (std::size_t i = 0; i < dY.size(); ++i) dY.data()[i] = dYc.data()[i] = Y.data()[i] - 0.2f;
        bp(dY);
        bpc(dYc);
        gpu_model.finish_update(og);
        cpu_model.finish_update(oc);
    }
    const Floats2d P2 = gpu_model.predict(Xd), P2c = cpu_model.predict(X);
    std::printf("after 3 Adam steps: max |gpu - cpu| = %g\n", double(worst(P2.data(), P2c.data(), P2.size())));
    failed += !(worst(P2.data(), P2c.data(), P2.size()) <= 1e-4f);
    std::printf("%s\n", failed ? "FAILED" : "passed");
    return failed ? 1 : 0;
}
