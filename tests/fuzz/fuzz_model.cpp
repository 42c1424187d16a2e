// libFuzzer target over model files (tests/fuzz/README.md): `make fuzz` builds it with
// clang++ -fsanitize=fuzzer,address,undefined and runs it on the seeds that fuzz_replay
// --write-seeds writes. The harness itself is fuzz_harness.cpp (shared with the replay test).
#include <cstddef>
#include <cstdint>

#include "fuzz_harness.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    (void)tenon_fuzz::run_one(data, size);
    return 0;
}
