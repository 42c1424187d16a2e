// The GEMM kernel for x86-64-v3 (AVX2, FMA): meson compiles this file with -march=x86-64-v3.
#define Eigen tenon_eigen_x86_64_v3
#define TENON_GEMM_FN sgemm_x86_64_v3
#include "gemm_impl.hpp"
