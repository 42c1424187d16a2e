// tenon's SGEMM for x86-64-v3 (AVX2, FMA): meson compiles this file with -march=x86-64-v3.
#define TENON_SGEMM_AVX512 0
#define TENON_SGEMM_FN sgemm_packed_avx2
#include "sgemm_packed.hpp"
