// tenon's SGEMM for x86-64-v4 (AVX-512): meson compiles this file with -march=x86-64-v4.
#define TENON_SGEMM_AVX512 1
#define TENON_SGEMM_FN sgemm_packed_avx512
#define TENON_SGEMM_PACKED_SIZE_FN sgemm_packed_size_avx512
#define TENON_SGEMM_PACK_FN sgemm_pack_b_avx512
#define TENON_SGEMM_PREPACKED_FN sgemm_prepacked_avx512
#include "sgemm_packed.hpp"
