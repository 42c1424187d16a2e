// The GEMM kernel for any x86-64 (SSE2), compiled with the build's default flags.
#define Eigen tenon_eigen_generic
#define TENON_GEMM_FN sgemm_generic
#include "gemm_impl.hpp"
