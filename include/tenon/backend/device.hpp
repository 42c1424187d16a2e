// The device backend (docs/cuda.md): one source (src/device/) built twice.
#pragma once
#include "tenon/backend/ops.hpp"

namespace tenon {
// Compiled as host code (Thrust's CPP system, a host cuBLAS over the CPU's product): the test
// suite's check of the device backend without a GPU. In libtenon_device_host (meson, always).
const Ops& device_host_ops() noexcept;
// On a CUDA GPU (Thrust, cuBLAS, cuBLASLt). In libtenon_cuda, built with -Dcuda=enabled (or auto
// with nvcc found). A model moves there with to_gpu (model/device.hpp), its data with to_device.
const Ops& cuda_ops() noexcept;
// Whether the CUDA runtime sees a GPU (in libtenon_cuda too).
bool cuda_device_present() noexcept;
}  // namespace tenon
