// The device allocator (docs/cuda.md, "The device allocator"): a caching allocator in front of a
// device backend's raw calls (DeviceMemoryProvider: cudaMallocAsync from the device's memory
// pool in libtenon_cuda, host memory in the device-host build), so the logic below runs in
// `make test` exactly as it runs on a GPU.
//
// * Blocks are rounded up to size classes (four per power of two, at least 256 bytes: at most
//   25% more than asked) and kept when freed; a request takes a cached block of its class, so
//   a training loop at one batch size stops asking the device for memory after its first step.
// * The high-water mark of held bytes stays flat: before a new block would raise `held` above
//   the most it has ever been, cached blocks (smallest first) go back to the device until it
//   fits. A request never takes a larger class's block, so the bytes in use are the rounded
//   sizes of the live arrays, never more: a batch no larger than the largest served uses no
//   more than it did, and random batch sizes after warm-up (the largest batch, and smaller ones
//   down by halves) hold no more than the warm-up did (tests/unit/test_device_memory.cpp). A
//   miss then costs a device allocation, which on a GPU is cudaMallocAsync from the device's
//   pool (no synchronisation, memory the pool keeps).
// * A cap (set_device_memory_limit): a block that would pass it first gives back every cached
//   block, then fails; a failed allocation (the cap's or the device's) returns nullptr and the
//   array throws tenon-E341, naming the bytes, shape, use and cap. Nothing else changes, so a
//   model whose call failed is as it was before the call and can go on with a smaller batch.
// * Every block taken from the device is in a map (start -> size): memory_of(p) says whether a
//   pointer (a view's: views carry no tag) points into device memory.
// One mutex guards it all: device arrays are a model's parameters, inputs and a call's
// workspaces, not per-value allocations.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "tenon/error.hpp"
#include "tenon/types/device_memory.hpp"

namespace tenon::detail {

std::atomic<std::size_t> device_blocks{0};

namespace {
constexpr std::size_t min_block = 256;  // cudaMalloc's alignment

std::size_t round_block(std::size_t b) noexcept {
    if (b <= min_block) return min_block;
    std::size_t base = min_block;
    while (base * 2 < b) base *= 2;  // base < b <= 2 base
    const std::size_t step = base / 4;
    return base + (b - base + step - 1) / step * step;
}

struct Pool {
    std::mutex m;
    const DeviceMemoryProvider* prov = nullptr;
    const void* ops_hint = nullptr;
    std::map<std::uintptr_t, std::size_t> blocks;  // every block taken from the device
    std::multimap<std::size_t, void*> cached;      // free blocks by size
    DeviceMemoryStats s;

    void give_back(std::multimap<std::size_t, void*>::iterator it) {
        prov->free(it->second);
        blocks.erase(reinterpret_cast<std::uintptr_t>(it->second));
        device_blocks.fetch_sub(1, std::memory_order_relaxed);
        s.held -= it->first;
        cached.erase(it);
    }
    void release_all() {
        while (!cached.empty()) give_back(cached.begin());
    }
    // Cached blocks back, smallest first, until `held + more` is at most `bound`.
    void release_until(std::size_t more, std::size_t bound) {
        while (!cached.empty() && s.held + more > bound) give_back(cached.begin());
    }
};
Pool& pool() {
    static Pool* p = new Pool;  // never destroyed: arrays with static storage are freed after main
    return *p;
}
}  // namespace

void set_device_memory_provider(const DeviceMemoryProvider& p) {
    Pool& P = pool();
    std::lock_guard lock(P.m);
    if (P.prov == &p) return;
    if (P.prov && P.s.held > 0)
        throw Error(std::string("device memory: the ") + p.name + " backend cannot take over device memory while " +
                        std::to_string(P.s.held) + " bytes of the " + P.prov->name +
                        " backend's are held: one device backend per process",
                    "tenon-E343");
    P.prov = &p;
}
void set_device_ops_hint(const void* ops) noexcept {
    Pool& P = pool();
    std::lock_guard lock(P.m);
    P.ops_hint = ops;
}
const void* device_ops_hint() noexcept {
    Pool& P = pool();
    std::lock_guard lock(P.m);
    return P.ops_hint;
}

namespace {
[[noreturn]] void throw_no_device() {
    throw Error("device memory: no device backend has been started in this program: device arrays come from the "
                "device backend's memory (cuda_ops() in libtenon_cuda, or device_host_ops() in "
                "libtenon_device_host); use it (to_gpu(model, ops), set_current_ops) before making device arrays",
                "tenon-E340");
}
}  // namespace

void* device_alloc(std::size_t bytes, std::size_t& capacity) {
    Pool& P = pool();
    std::lock_guard lock(P.m);
    if (!P.prov) throw_no_device();
    const std::size_t size = round_block(bytes);
    auto it = P.cached.find(size);
    if (it != P.cached.end()) {
        void* p = it->second;
        capacity = it->first;
        P.cached.erase(it);
        P.s.in_use += capacity;
        P.s.peak_in_use = std::max(P.s.peak_in_use, P.s.in_use);
        return p;
    }
    // A new block: within the cap, and without raising the high-water mark while cached blocks
    // could make room.
    if (P.s.limit && P.s.held + size > P.s.limit) P.release_all();
    if (P.s.limit && P.s.held + size > P.s.limit) {
        ++P.s.failures;
        return nullptr;
    }
    P.release_until(size, P.s.high_water);
    void* p = P.prov->alloc(size);
    if (!p) {  // the device is full: give back what is cached and try once more
        P.release_all();
        p = P.prov->alloc(size);
    }
    if (!p) {
        ++P.s.failures;
        return nullptr;
    }
    P.blocks.emplace(reinterpret_cast<std::uintptr_t>(p), size);
    device_blocks.fetch_add(1, std::memory_order_relaxed);
    ++P.s.device_allocs;
    P.s.held += size;
    P.s.high_water = std::max(P.s.high_water, P.s.held);
    P.s.in_use += size;
    P.s.peak_in_use = std::max(P.s.peak_in_use, P.s.in_use);
    capacity = size;
    return p;
}

void device_free(void* p, std::size_t capacity) noexcept {
    if (!p) return;
    Pool& P = pool();
    std::lock_guard lock(P.m);
    P.s.in_use -= capacity;
    P.cached.emplace(capacity, p);
}

void throw_device_alloc_failed(std::size_t bytes, const char* shape) {
    DeviceMemoryStats s = device_memory_stats();
    std::string why = s.limit && s.held + bytes > s.limit ? "it would pass the cap of " + std::to_string(s.limit) +
                                                                " bytes (set_device_memory_limit)"
                                                          : std::string("the device has no more memory");
    throw Error("device memory: cannot allocate " + std::to_string(bytes) + " bytes for shape " + shape + ": " +
                    why + "; " + std::to_string(s.in_use) + " bytes are in use and " + std::to_string(s.held) +
                    " held; use a smaller batch, raise the cap or release_device_memory() (the model is unchanged)",
                "tenon-E341");
}

Memory memory_of_slow(const void* p) noexcept {
    Pool& P = pool();
    std::lock_guard lock(P.m);
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    auto it = P.blocks.upper_bound(a);
    if (it == P.blocks.begin()) return Memory::host;
    --it;
    return a < it->first + it->second ? Memory::device : Memory::host;
}

void copy_bytes_slow(void* dst, Memory to, const void* src, Memory from, std::size_t n) {
    if (to == Memory::host && from == Memory::host) {
        std::memcpy(dst, src, n);
        return;
    }
    Pool& P = pool();
    const DeviceMemoryProvider* prov;
    {
        std::lock_guard lock(P.m);
        prov = P.prov;
        if (prov && to != from) {
            ++P.s.transfers;
            P.s.transfer_bytes += n;
        }
    }
    if (!prov) throw_no_device();
    prov->copy(dst, src, n, to == Memory::device, from == Memory::device);
}

void zero_bytes_device(void* p, std::size_t n) {
    if (n == 0) return;
    const DeviceMemoryProvider* prov;
    {
        Pool& P = pool();
        std::lock_guard lock(P.m);
        prov = P.prov;
    }
    if (!prov) throw_no_device();
    prov->zero(p, n);
}

// A fill with a value other than zero: the values made on the host and copied over (no
// kernel of its own; not counted as a transfer: it is the array's own fill, not data).
void fill_device(void* p, std::size_t count, const void* value, std::size_t size) {
    if (count == 0) return;
    const auto* v = static_cast<const unsigned char*>(value);
    if (std::all_of(v, v + size, [](unsigned char c) { return c == 0; })) return zero_bytes_device(p, count * size);
    std::vector<unsigned char> host(count * size);
    for (std::size_t i = 0; i < count; ++i) std::memcpy(host.data() + i * size, v, size);
    const DeviceMemoryProvider* prov;
    {
        Pool& P = pool();
        std::lock_guard lock(P.m);
        prov = P.prov;
    }
    if (!prov) throw_no_device();
    prov->copy(p, host.data(), host.size(), true, false);
}

// The strict device-host mode's scopes (device_memory.hpp): device memory is inaccessible
// exactly while some thread is inside a device model's call and none is inside a backend
// entry. Counted process-wide, not per thread: a thread in a backend entry makes the memory
// accessible to all, so threads never cause a false crash (only a missed one).
namespace {
struct Strict {
    std::mutex m;
    int calls = 0, backend = 0;
    void (*set_access)(bool) = nullptr;  // the device-host arena's mprotect (host_ops.cpp)
};
Strict& strict() {
    static Strict* s = new Strict;  // never destroyed: scopes may close after main
    return *s;
}
void strict_count(bool backend, int by) noexcept {
    Strict& S = strict();
    std::lock_guard lock(S.m);
    const bool was = S.calls > 0 && S.backend == 0;
    (backend ? S.backend : S.calls) += by;
    const bool now = S.calls > 0 && S.backend == 0;
    if (was != now) S.set_access(!now);
}
}  // namespace
void enable_strict_device_host(void (*set_access)(bool accessible)) noexcept {
    Strict& S = strict();
    std::lock_guard lock(S.m);
    S.set_access = set_access;
    strict_device_host.store(true, std::memory_order_relaxed);
}
void strict_expect(const void* p, Memory m, const char* what, const char* entry) noexcept {
    if (!p || !strict_device_host.load(std::memory_order_relaxed) || memory_of(p) == m) return;
    std::fprintf(stderr, "tenon strict device-host: the backend's %s was given %s in %s memory, where it takes %s memory\n",
                 entry, what, memory_name(memory_of(p)), memory_name(m));
    std::abort();
}
void strict_enter(bool backend) noexcept { strict_count(backend, 1); }
void strict_leave(bool backend) noexcept { strict_count(backend, -1); }

}  // namespace tenon::detail

namespace tenon {
DeviceMemoryStats device_memory_stats() noexcept {
    detail::Pool& P = detail::pool();
    std::lock_guard lock(P.m);
    return P.s;
}
void set_device_memory_limit(std::size_t bytes) noexcept {
    detail::Pool& P = detail::pool();
    std::lock_guard lock(P.m);
    P.s.limit = bytes;
}
void release_device_memory() noexcept {
    detail::Pool& P = detail::pool();
    std::lock_guard lock(P.m);
    if (!P.prov) return;
    P.release_all();
    if (P.prov->trim) P.prov->trim();
}
void reset_device_memory_high_water() noexcept {
    detail::Pool& P = detail::pool();
    std::lock_guard lock(P.m);
    P.s.high_water = P.s.held;
    P.s.peak_in_use = P.s.in_use;
}
}  // namespace tenon
