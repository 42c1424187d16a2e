// Picks the GEMM kernel for this CPU once, at first use.
#include "tenon/backend/cpu/gemm.hpp"

#include <cstdlib>
#include <cstring>

namespace tenon::cpu {

using GemmFn = void (*)(bool, bool, std::size_t, std::size_t, std::size_t, float, const float*, std::size_t,
                        const float*, std::size_t, float, float*, std::size_t);
void sgemm_generic(bool, bool, std::size_t, std::size_t, std::size_t, float, const float*, std::size_t, const float*,
                   std::size_t, float, float*, std::size_t);
#if TENON_HAVE_X86_64_V3
void sgemm_x86_64_v3(bool, bool, std::size_t, std::size_t, std::size_t, float, const float*, std::size_t,
                     const float*, std::size_t, float, float*, std::size_t);
#endif

namespace {
struct Choice {
    GemmFn fn;
    const char* name;
};
Choice choose() {
    const char* forced = std::getenv("TENON_GEMM_TARGET");
    const bool generic_only = forced && std::strcmp(forced, "generic") == 0;
#if TENON_HAVE_X86_64_V3
    __builtin_cpu_init();
    if (!generic_only && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return {sgemm_x86_64_v3, "x86-64-v3"};
#endif
    (void)generic_only;
    return {sgemm_generic, "generic"};
}
const Choice& chosen() {
    static const Choice c = choose();
    return c;
}
}  // namespace

void sgemm(bool ta, bool tb, std::size_t m, std::size_t n, std::size_t k, float alpha, const float* a, std::size_t lda,
           const float* b, std::size_t ldb, float beta, float* c, std::size_t ldc) {
    chosen().fn(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

const char* gemm_target() { return chosen().name; }

}  // namespace tenon::cpu
