// The device backend's passes on a CUDA GPU (docs/cuda.md): device_ops.inl under nvcc, Thrust's
// CUDA system; the functors of backend/functors.hpp instantiated as device code, one closed set
// per pass (the Activation and Reduce switches inside each functor). Compiled by meson's
// custom_target for sm_80 and sm_90 plus PTX with every warning an error.
#define TENON_DEVICE_NS device_cuda
#define TENON_DEVICE_NAME "cuda"
#define TENON_DEVICE_CUDA 1

#include "../src/device/device_ops.inl"
