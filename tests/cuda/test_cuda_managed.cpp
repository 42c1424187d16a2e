// The GPU run of the test suite's memory (checked only on a GPU: docs/cuda.md): with
// TENON_CUDA_MANAGED=1 device arrays are managed memory, so that the tests' own code may fill and
// read them on the host, and a device model's call waits for the device when it returns. Here a
// model moved to the GPU predicts and trains on an input filled on the host, its results are
// read on the host without a copy, and they are compared with the same model on the CPU.
// Without a GPU it exits 77 (meson's skip).
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "tenon/backend/device.hpp"
#include "tenon/tenon.hpp"

using namespace tenon;

namespace {
float worst(const Floats2d& a, const Floats2d& b) {
    float w = 0.0f;
    for (std::size_t i = 0; i < a.size(); ++i) w = std::fmax(w, std::fabs(a.data()[i] - b.data()[i]));
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
    auto cpu = Relu<32>() >> Softmax<5>();
    Floats2d X({64, 12}, uninitialized);
    for (std::size_t i = 0; i < X.size(); ++i) X.data()[i] = std::sin(0.37f * float(i));
    cpu.initialize(X);
    auto gpu = cpu;
    to_gpu(gpu, cuda_ops());
    int failed = 0;

    // The input made as device memory and filled on the host (what the suite's random inputs do).
    Floats2d Xd({64, 12}, uninitialized, Memory::device);
    for (std::size_t i = 0; i < X.size(); ++i) Xd.data()[i] = X.data()[i];
    const Floats2d P = gpu.predict(Xd), Pc = cpu.predict(X);
    failed += P.memory() != Memory::device;
    std::printf("predict: max |gpu - cpu| = %g\n", double(worst(P, Pc)));
    failed += !(worst(P, Pc) <= 1e-5f);

    Optimizer og = Adam(0.01), oc = Adam(0.01);
    for (int step = 0; step < 3; ++step) {
        auto [Y, bp] = gpu.begin_update(Xd);
        auto [Yc, bpc] = cpu.begin_update(X);
        Floats2d dY({64, 5}, uninitialized, Memory::device), dYc({64, 5}, uninitialized);
        for (std::size_t i = 0; i < dY.size(); ++i) dY.data()[i] = dYc.data()[i] = Y.data()[i] - 0.2f;
        bp(dY);
        bpc(dYc);
        gpu.finish_update(og);
        cpu.finish_update(oc);
    }
    const Floats2d P2 = gpu.predict(Xd), P2c = cpu.predict(X);
    std::printf("after 3 Adam steps: max |gpu - cpu| = %g\n", double(worst(P2, P2c)));
    failed += !(worst(P2, P2c) <= 1e-4f);
    std::printf("%s\n", failed ? "FAILED" : "passed");
    return failed ? 1 : 0;
}
