// tenon's SGEMM for x86-64-v4 (AVX-512): meson compiles this file with -march=x86-64-v4.
#define TENON_SGEMM_AVX512 1
#define TENON_SGEMM_FN sgemm_packed_avx512
#include "sgemm_packed.hpp"
