// Device memory (docs/cuda.md, "Device arrays" and "The device allocator"): which memory a new
// array gets, the caching device allocator arrays of Memory::device come from, and the copies
// between host and device. Implemented in src/device_memory.cpp; the raw calls (CUDA's
// cudaMallocAsync / cudaMemcpyAsync, or host memory in the device-host build) are a
// DeviceMemoryProvider that the device backend registers when it is first used.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "tenon/types/memory.hpp"

namespace tenon {

namespace detail {
// The memory this thread's new arrays get: -1 the process default (set_default_memory), else
// a Memory set by a MemoryScope (a model's entry points and its backprop set their model's).
inline constinit thread_local int memory_scope = -1;
inline constinit std::atomic<int> default_memory_v{0};
inline Memory current_memory() noexcept {
    const int s = memory_scope;
    return static_cast<Memory>(s >= 0 ? s : default_memory_v.load(std::memory_order_relaxed));
}

// The strict device-host mode (TENON_DEVICE_HOST_STRICT=1, docs/cuda.md): the device-host
// backend's memory cannot be touched while a thread runs host code inside a device model's call
// and no thread is inside a backend entry, so a host read of device memory there (a crash on a
// GPU) crashes here too. A call scope counts a model's entry point, its backprop and
// finish_update; a backend scope, each entry of the device-host backend and its provider's
// copies. Counted process-wide in src/device_memory.cpp; off (one relaxed load) unless strict.
inline constinit std::atomic<bool> strict_device_host{false};
inline constinit thread_local int strict_calls_here = 0;  // the call scopes open on this thread
void strict_enter(bool backend) noexcept;
void strict_leave(bool backend) noexcept;
// Turns the mode on (the device-host backend, once): set_access(false) makes its memory
// inaccessible, set_access(true) accessible again; called under the scopes' lock.
void enable_strict_device_host(void (*set_access)(bool accessible)) noexcept;
// In the strict mode, aborts with a message when p (an argument `what` of the backend's entry
// `entry`) is not null and not in memory m.
void strict_expect(const void* p, Memory m, const char* what, const char* entry) noexcept;
template <bool Backend>
class StrictScope {
public:
    explicit StrictScope(bool device = true) noexcept
        : on_(device && strict_device_host.load(std::memory_order_relaxed)) {
        if (on_) {
            if constexpr (!Backend) ++strict_calls_here;
            strict_enter(Backend);
        }
    }
    ~StrictScope() {
        if (on_) {
            strict_leave(Backend);
            if constexpr (!Backend) --strict_calls_here;
        }
    }
    StrictScope(const StrictScope&) = delete;
    StrictScope& operator=(const StrictScope&) = delete;

private:
    bool on_;
};
using StrictCall = StrictScope<false>;
using StrictBackend = StrictScope<true>;

class MemoryScope {
public:
    explicit MemoryScope(Memory m) noexcept : was_(memory_scope), call_(m == Memory::device) {
        memory_scope = static_cast<int>(m);
    }
    ~MemoryScope() { memory_scope = was_; }
    MemoryScope(const MemoryScope&) = delete;
    MemoryScope& operator=(const MemoryScope&) = delete;

private:
    int was_;
    StrictCall call_;  // a device model's call (every MemoryScope of the device's memory is one)
};

// The raw calls behind the device allocator (a device backend's: src/device/host_ops.cpp,
// src/device/cuda_memory.cpp). alloc returns nullptr when the device has no memory.
struct DeviceMemoryProvider {
    const char* name;  // "device-host", "cuda"
    void* (*alloc)(std::size_t bytes) noexcept;
    void (*free)(void* p) noexcept;
    // n bytes between host and device (or within the device), complete when it returns.
    void (*copy)(void* dst, const void* src, std::size_t n, bool to_device, bool from_device);
    void (*zero)(void* p, std::size_t n);
    // After release_device_memory: hands what the device's own pool keeps back (null: nothing).
    void (*trim)() noexcept;
};
// Registers the provider device arrays come from (the device backend's first use does it).
// A second provider while device memory is held is tenon-E343.
void set_device_memory_provider(const DeviceMemoryProvider& p);
// The device backend registered with the provider (to_gpu's default target), or null.
void set_device_ops_hint(const void* ops) noexcept;
const void* device_ops_hint() noexcept;

// A block of at least `bytes` from the caching allocator (its size in `capacity`), or nullptr
// when it does not fit the limit or the device (after the cached blocks were given back).
// tenon-E340 when no device backend has registered a provider.
void* device_alloc(std::size_t bytes, std::size_t& capacity);
void device_free(void* p, std::size_t capacity) noexcept;
// tenon-E341 for an array of `bytes` and `shape` that the device allocator cannot make.
[[noreturn]] void throw_device_alloc_failed(std::size_t bytes, const char* shape);
// Copies and zeroing across memories (host to host is memcpy; the rest goes to the provider
// and is counted in DeviceMemoryStats::transfers when it crosses between host and device).
void copy_bytes_slow(void* dst, Memory to, const void* src, Memory from, std::size_t n);
inline void copy_bytes(void* dst, Memory to, const void* src, Memory from, std::size_t n);
void zero_bytes_device(void* p, std::size_t n);
// count values of `size` bytes each, all equal to *value (a host value).
void fill_device(void* p, std::size_t count, const void* value, std::size_t size);
// Whether p points into a block the device allocator holds (a view's memory: views carry no
// tag). One relaxed load when no device memory was ever allocated.
extern std::atomic<std::size_t> device_blocks;
Memory memory_of_slow(const void* p) noexcept;
inline Memory memory_of(const void* p) noexcept {
    return device_blocks.load(std::memory_order_relaxed) == 0 ? Memory::host : memory_of_slow(p);
}
}  // namespace detail

// The memory new arrays get outside a model's calls, process-wide: Memory::host (the
// default) or Memory::device (then every array made by the program is device memory, as the
// test suite's device-host run does: tests/catch_main.cpp). Inside a model's predict,
// begin_update and backprop, new arrays get the model's backend's memory.
inline void set_default_memory(Memory m) noexcept {
    detail::default_memory_v.store(static_cast<int>(m), std::memory_order_relaxed);
}
inline Memory default_memory() noexcept {
    return static_cast<Memory>(detail::default_memory_v.load(std::memory_order_relaxed));
}

// The device allocator's state (docs/cuda.md, "The device allocator").
struct DeviceMemoryStats {
    std::size_t in_use = 0;        // bytes of the blocks arrays hold now
    std::size_t held = 0;          // bytes taken from the device: in use plus cached
    std::size_t high_water = 0;    // the most `held` has been (reset_device_memory_high_water)
    std::size_t peak_in_use = 0;   // the most `in_use` has been
    std::size_t limit = 0;         // the cap on `held` (0: none but the device's own)
    std::size_t device_allocs = 0; // blocks taken from the device (cache misses)
    std::size_t failures = 0;      // allocations refused (tenon-E341)
    std::size_t transfers = 0;     // copies between host and device (to_device, to_host, to_gpu ...)
    std::size_t transfer_bytes = 0;
};
DeviceMemoryStats device_memory_stats() noexcept;
// Caps the bytes the allocator holds (0: no cap). An allocation that would pass the cap first
// gives back the cached blocks; if it still does not fit, it fails with tenon-E341.
void set_device_memory_limit(std::size_t bytes) noexcept;
// Gives every cached (free) block back to the device; blocks in use stay.
void release_device_memory() noexcept;
void reset_device_memory_high_water() noexcept;

inline void detail::copy_bytes(void* dst, Memory to, const void* src, Memory from, std::size_t n) {
    if (n == 0) return;
    if (to == Memory::host && from == Memory::host) {
        __builtin_memcpy(dst, src, n);
        return;
    }
    copy_bytes_slow(dst, to, src, from, n);
}

}  // namespace tenon
