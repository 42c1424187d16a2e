// tenon's SGEMM for x86-64-v3 (AVX2, FMA): meson compiles this file with -march=x86-64-v3.
#define TENON_SGEMM_AVX512 0
#define TENON_SGEMM_FN sgemm_packed_avx2
#define TENON_SGEMM_PACKED_SIZE_FN sgemm_packed_size_avx2
#define TENON_SGEMM_PACK_FN sgemm_pack_b_avx2
#define TENON_SGEMM_PREPACKED_FN sgemm_prepacked_avx2
#include "sgemm_packed.hpp"
