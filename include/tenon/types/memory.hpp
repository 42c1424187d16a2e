// Where an array's memory lives (docs/cuda.md, "Device arrays"): the tag an array's storage
// carries and a backend's Ops states. Only the tag here: the backend interface includes this
// header, and what nvcc sees stays small (the device allocator is types/device_memory.hpp).
#pragma once
#include <cstdint>

namespace tenon {
// host: ordinary memory, read and written by the CPU. device: memory from the device
// allocator (a CUDA GPU's in libtenon_cuda; in the device-host build, host memory handed out
// by the same caching allocator, so that every rule about it is checked without a GPU).
enum class Memory : std::uint8_t { host, device };
constexpr const char* memory_name(Memory m) noexcept { return m == Memory::host ? "host" : "device"; }
}  // namespace tenon
