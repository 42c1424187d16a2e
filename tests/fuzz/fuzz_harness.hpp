// The fuzz harness for model files (tests/fuzz/README.md): one input is a selector byte and
// then the bytes of a file. Shared by the libFuzzer target (fuzz_model.cpp) and the replay
// test (replay_main.cpp, built without libFuzzer), so a crash found by one replays in the other.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace tenon_fuzz {

// Which model the file is loaded into (bit 0 of the selector byte).
enum class Target : std::uint8_t { mlp = 0, textcat = 1 };

// What one input did: the load threw tenon::Error, or it loaded (and the model then predicted
// or threw tenon::Error). Anything else (a crash, another exception, a sanitizer report, a
// loaded model that cannot be saved and reloaded) aborts.
enum class Outcome { rejected, loaded };

// Runs one input (selector byte + file). Bit 0 of the selector picks the model; when bits 1-4
// are not all zero (15 inputs in 16), the header's length, CRC-32 and reserved field are
// rewritten to match the body first, so that mutations reach the decoder and restore(); bit 5
// loads into a model that was initialised first (a load over existing weights).
Outcome run_one(const std::uint8_t* data, std::size_t size);

// The seeds: selector byte + a file written by each model (trained a little: several
// variants per model), for the fuzzer's seed directory and for the replay test.
std::vector<std::vector<std::uint8_t>> seeds();

}  // namespace tenon_fuzz
