// One Catch2 main, compiled once and linked into every test program. TENON_TEST_OPS picks the
// backend every model of the run starts on (set_current_ops): unset or "cpu" the CPU's,
// "device-host" the device backend compiled as host code, "cuda" the device backend on a GPU
// (docs/cuda.md; a skip, exit 77, without a GPU); a backend this build lacks, or an unknown
// name, is an error.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "tenon/backend/device.hpp"
#include "tenon/backend/ops.hpp"
#include "tenon/types/device_memory.hpp"

int main(int argc, char* argv[]) {
    if (const char* want = std::getenv("TENON_TEST_OPS"); want && *want && std::strcmp(want, "cpu") != 0) {
        const tenon::Ops* ops = nullptr;
#if defined(TENON_HAVE_DEVICE_HOST)
        if (std::strcmp(want, "device-host") == 0) ops = &tenon::device_host_ops();
#endif
#if defined(TENON_HAVE_CUDA)
        if (std::strcmp(want, "cuda") == 0) {
            if (!tenon::cuda_device_present()) {
                std::puts("TENON_TEST_OPS=cuda: no CUDA device, skipped");
                return 77;  // meson's skip
            }
            ops = &tenon::cuda_ops();
        }
#endif
        if (!ops) {
            std::fprintf(stderr, "TENON_TEST_OPS=%s: no such backend in this build (cpu%s%s)\n", want,
#if defined(TENON_HAVE_DEVICE_HOST)
                         ", device-host",
#else
                         "",
#endif
#if defined(TENON_HAVE_CUDA)
                         ", cuda"
#else
                         ""
#endif
            );
            return 2;
        }
        tenon::set_current_ops(*ops);
        // A device backend's run puts everything on the device: every array the tests make is
        // device memory (in the device-host build host memory handed out by the device
        // allocator), so the models, their inputs and the data the tests compare all go through
        // the device allocator and the entry points' memory check (docs/cuda.md).
        tenon::set_default_memory(ops->memory());
    }
    return Catch::Session().run(argc, argv);
}
