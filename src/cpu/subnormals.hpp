// Subnormal floats (below 1.18e-38) as zero, for the length of one kernel call.
//
// Adam's moments of a weight whose gradient stays zero (a Fashion-MNIST pixel that is black in
// every image, a dead unit) decay by beta1 = 0.9 a step and pass through the subnormal range
// on their way to zero; x86 cores take a microcode assist for each subnormal result, which
// made the optimizer pass 1.7x slower on a real training run. Flushing them changes values
// only below 1.2e-38 (the update of such a weight is below 1e-30 either way), the same way on
// every thread, so results stay bitwise reproducible. The caller's floating-point mode is
// restored on return: the library never changes it for the user's own code.
#pragma once
#if defined(__SSE__) || defined(__x86_64__)
#include <xmmintrin.h>
#endif

namespace tenon::cpu {

class FlushSubnormals {
public:
#if defined(__SSE__) || defined(__x86_64__)
    // MXCSR bit 15: flush-to-zero (results); bit 6: denormals-are-zero (inputs).
    static constexpr unsigned kBits = 0x8040u;
    FlushSubnormals() : saved_(_mm_getcsr()) {
        if ((saved_ & kBits) != kBits) _mm_setcsr(saved_ | kBits);
    }
    ~FlushSubnormals() {
        if ((saved_ & kBits) != kBits) _mm_setcsr(saved_);
    }

private:
    unsigned saved_;
#endif
    FlushSubnormals(const FlushSubnormals&) = delete;
    FlushSubnormals& operator=(const FlushSubnormals&) = delete;
};

}  // namespace tenon::cpu
