// Reads an array after it was destroyed, through a view that outlived it. Built with
// AddressSanitizer: the run must be reported (run by expect_asan.py, which checks the report).
// Argument "cache": with tenon's block cache on (its cached blocks are poisoned); else the
// default under ASan (no cache: the block goes back to ASan's allocator, into quarantine).
#include <cstdio>
#include <cstring>

#include "tenon/tenon.hpp"

using namespace tenon;

int main(int argc, char** argv) {
    if (argc > 1 && std::strcmp(argv[1], "cache") == 0) tenon::detail::set_array_cache(true);
    Floats2dView v;
    {
        Floats2d X({30, 40});
        X.fill(24.0f);
        v = X;
    }
    // Another allocation in between, larger than X (a smaller one may take X's cached block:
    // blocks serve requests up to 8 times smaller, src/alloc.cpp).
    Floats2d other({70, 70});
    volatile float x = v(3, 4);  // use after free
    std::printf("read %g after free: not reported\n", static_cast<double>(x));
    return 0;
}
