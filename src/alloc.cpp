// Array memory: 64-byte aligned, with a per-thread cache of freed blocks by exact size.
// Training and serving allocate the same few sizes at every step: after the first step of a
// batch size every array comes from the cache, so a step makes no heap allocation
// (tests/unit/test_alloc.cpp), and large blocks are not mapped afresh each time (glibc serves
// each with a new mmap, whose page faults cost more than the arithmetic at batch 32). The
// cache is bounded; blocks beyond the bound go back to the system.
//
// Reliability (docs/reliability.md, "Memory"):
// * Arrays with static or thread storage duration may be freed after the thread's cache is
//   destroyed (at exit, a global model is destroyed after the main thread's thread_locals):
//   the cache marks itself gone, and later frees go straight to the system.
// * Under AddressSanitizer the cache is off by default (TENON_ARRAY_CACHE=1 turns it on), so
//   every array is a heap block of its own and a use of a freed array is reported; when it
//   is on, the blocks it holds are poisoned, so a use of one is reported too.
// * Sizes are checked (checked_bytes) and a failed allocation names its size and shape
//   (tenon-E240, tenon-E241).
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <unordered_map>
#include <vector>

#include "tenon/types/array.hpp"

#if TENON_ASAN
#include <sanitizer/asan_interface.h>
#define TENON_POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define TENON_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define TENON_POISON(p, n) ((void)(p), (void)(n))
#define TENON_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

namespace tenon::detail {
namespace {

constexpr std::size_t cache_limit = std::size_t{256} << 20;  // per thread

// nothrow: under ASan a throwing operator new that fails aborts the program instead of
// throwing, and the caller turns the failure into tenon-E241 (with allocator_may_return_null=1).
void* raw_alloc(std::size_t bytes) {
    void* p = ::operator new(bytes, std::align_val_t{array_alignment}, std::nothrow);
    if (!p) throw std::bad_alloc();
    return p;
}
void raw_free(void* p) noexcept { ::operator delete(p, std::align_val_t{array_alignment}); }

// -1: not decided yet (TENON_ARRAY_CACHE, else on unless under ASan); 0 off; 1 on.
std::atomic<int> cache_mode{-1};

bool cache_on() noexcept {
    int m = cache_mode.load(std::memory_order_relaxed);
    if (m < 0) {
        const char* env = std::getenv("TENON_ARRAY_CACHE");
        m = env && *env ? (std::strcmp(env, "0") != 0) : !TENON_ASAN;
        int expected = -1;
        if (!cache_mode.compare_exchange_strong(expected, m, std::memory_order_relaxed)) m = expected;
    }
    return m != 0;
}

// Set when the thread's cache has been destroyed (trivially destructible and constant-
// initialised, so it can be read at any time until the thread is gone).
thread_local bool cache_gone = false;

struct BlockCache {
    std::unordered_map<std::size_t, std::vector<void*>> free_blocks;
    std::size_t cached_bytes = 0;
    ~BlockCache() {
        cache_gone = true;  // frees from here on (static arrays at exit) go to the system
        for (auto& [bytes, blocks] : free_blocks)
            for (void* p : blocks) {
                TENON_UNPOISON(p, bytes);
                raw_free(p);
            }
    }
};

BlockCache* cache() noexcept {
    if (cache_gone) return nullptr;
    thread_local BlockCache c;
    return &c;
}

}  // namespace

void set_array_cache(bool on) noexcept { cache_mode.store(on ? 1 : 0, std::memory_order_relaxed); }
bool array_cache_enabled() noexcept { return cache_on(); }

std::size_t checked_bytes(const std::size_t* shape, std::size_t rank, std::size_t elem_size) {
    std::size_t n = 1;
    bool overflow = false;
    for (std::size_t i = 0; i < rank; ++i) overflow |= __builtin_mul_overflow(n, shape[i], &n);
    std::size_t bytes = 0;
    overflow |= __builtin_mul_overflow(n, elem_size, &bytes);
    // (any zero extent makes the array empty, whatever the others are)
    for (std::size_t i = 0; i < rank; ++i)
        if (shape[i] == 0) return 0;
    if (overflow || bytes > static_cast<std::size_t>(PTRDIFF_MAX)) {
        std::string s = "(";
        for (std::size_t i = 0; i < rank; ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
        s += ")";
        throw Error("array: shape " + s + " is too large: " +
                        (overflow ? std::string("the product of its extents") : std::to_string(n) + " elements") +
                        " times " + std::to_string(elem_size) + " bytes each exceeds the largest possible size (" +
                        std::to_string(PTRDIFF_MAX) + " bytes)",
                    "tenon-E240");
    }
    return bytes;
}

void throw_alloc_failed(std::size_t bytes, const std::string& shape) {
    throw Error("array: cannot allocate " + std::to_string(bytes) + " bytes for shape " + shape +
                    " (out of memory)",
                "tenon-E241");
}

void* array_alloc(std::size_t bytes) {
    if (cache_on()) {
        if (BlockCache* c = cache()) {
            auto it = c->free_blocks.find(bytes);
            if (it != c->free_blocks.end() && !it->second.empty()) {
                void* p = it->second.back();
                it->second.pop_back();
                c->cached_bytes -= bytes;
                TENON_UNPOISON(p, bytes);
                return p;
            }
        }
    }
    return raw_alloc(bytes);
}

void array_free(void* p, std::size_t bytes) noexcept {
    if (!p) return;
    if (cache_on()) {
        if (BlockCache* c = cache(); c && c->cached_bytes + bytes <= cache_limit) {
            try {
                c->free_blocks[bytes].push_back(p);
                c->cached_bytes += bytes;
                TENON_POISON(p, bytes);
                return;
            } catch (...) {  // no memory for the bookkeeping: free the block instead
            }
        }
    }
    raw_free(p);
}

}  // namespace tenon::detail
