// Array memory: 64-byte aligned blocks, with a per-thread cache of freed blocks.
// Training and serving allocate the same few arrays at every call: once a thread has served
// a call, the next call's arrays come from its cache, so a warmed-up call makes no heap
// allocation (tests/unit/test_alloc.cpp), and large blocks are not mapped afresh each time
// (glibc serves each with a new mmap, whose page faults cost more than the arithmetic at
// batch 32).
//
// Size classes, so that a service with random batch sizes and document lengths stops
// allocating too: a block's size is rounded up to one of four sizes per power of two (at
// most 25% more than asked), and a request takes the smallest cached block of its class or
// of the next `reach` classes (up to 8x its size), or any cached block of up to 16 KiB (a
// call's many small arrays, one per document, find blocks whatever their lengths). Once a
// thread has served the range of its traffic (the largest batch, and smaller ones down by
// factors of 2: tests/unit/test_alloc.cpp), its calls find blocks and allocate nothing, and
// the cache holds about the arrays of its largest call (1.1x in that test), not a block for
// every size ever asked. List vectors and the combinators' small bookkeeping come from the
// same cache (CacheAllocator, block_alloc).
// A thread's cache keeps the blocks of its own arrays only (the arrays of a model another
// thread made, freed here when it is swapped out, go back to the system instead of staying
// in a serving thread's cache), and at most 256 MiB by default (set_array_cache_limit); a
// block beyond the bound goes back to the system. release_array_cache() hands every thread's
// blocks back (docs/reliability.md, "Memory").
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
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

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

// The bound on one thread's cached bytes: TENON_ARRAY_CACHE_MB in the environment at the
// first allocation, else 256 MiB; set_array_cache_limit changes it.
constexpr std::size_t default_limit = std::size_t{256} << 20;
std::atomic<std::size_t> limit_bytes{~std::size_t{0}};  // ~0: not decided yet

std::size_t cache_limit() noexcept {
    std::size_t l = limit_bytes.load(std::memory_order_relaxed);
    if (l == ~std::size_t{0}) [[unlikely]] {
        l = default_limit;
        if (const char* env = std::getenv("TENON_ARRAY_CACHE_MB"); env && *env) {
            char* end = nullptr;
            const unsigned long long mb = std::strtoull(env, &end, 10);
            if (end && *end == '\0' && mb < (std::size_t{1} << 40)) l = static_cast<std::size_t>(mb) << 20;
        }
        std::size_t expected = ~std::size_t{0};
        if (!limit_bytes.compare_exchange_strong(expected, l, std::memory_order_relaxed)) l = expected;
    }
    return l;
}

// Moves when release_array_cache() asks every thread to hand its blocks back; each cache
// compares it with the value it last saw at its next allocation or free.
std::atomic<std::uint64_t> release_generation{0};
// All threads' cached bytes together (for array_cache_bytes()).
std::atomic<std::size_t> total_cached{0};

// Size classes. Up to 512 bytes: multiples of 64 (classes 0..7). Above, for 2^m < b <= 2^(m+1):
// 2^m + q * 2^(m-2) with q = 1..4, four per power of two (class 8 + 4 (m - 9) + q - 1).
constexpr std::size_t small_limit = 512;
constexpr std::size_t n_classes = 256;
constexpr std::size_t reach = 12;  // a request may take a block up to 12 classes (8x) larger,
constexpr std::size_t small_block = 16384;  // or any block up to 16 KiB (a call's many small
                                            // arrays: per-document arrays, lengths, lists)

struct SizeClass {
    std::size_t index;  // n_classes: too large to cache
    std::size_t bytes;  // the block's size
};
SizeClass size_class(std::size_t b) noexcept {
    if (b <= small_limit) {
        const std::size_t q = (b + 63) / 64;  // 1..8 (b > 0)
        return {q - 1, q * 64};
    }
    const unsigned m = static_cast<unsigned>(std::bit_width(b - 1)) - 1;  // 2^m < b <= 2^(m+1), m >= 9
    const std::size_t base = std::size_t{1} << m, step = base >> 2;
    const std::size_t q = (b - base + step - 1) / step;  // 1..4
    const std::size_t index = 8 + 4 * (m - 9) + (q - 1);
    if (index >= n_classes) return {n_classes, b};
    return {index, base + q * step};
}

// Set when the thread's cache has been destroyed (trivially destructible and constant-
// initialised, so it can be read at any time until the thread is gone).
thread_local bool cache_gone = false;

// Free blocks are kept in one singly linked list per class, linked through the blocks
// themselves (the first word of a free block is the next one): keeping a block never
// allocates. A list's blocks are at least its class's size.
struct BlockCache {
    void* heads[n_classes] = {};                  // each class's first free block
    std::uint64_t nonempty[n_classes / 64] = {};  // bit c: heads[c] is not null
    std::size_t cached_bytes = 0;
    // The bytes of the blocks this thread has taken and not freed. A block freed while less
    // than its size is live cannot be this thread's: another thread made it (the arrays of a
    // model swapped out, whose last reference a serving thread happened to drop). Such a
    // block goes back to the system: a thread's cache keeps the blocks of its own calls, not
    // the models other threads made.
    std::size_t live = 0;

    void used(std::size_t n) noexcept { live += n; }
    // Whether the block freed may be this thread's own (and may be kept).
    bool unused(std::size_t n) noexcept {
        if (live < n) return false;
        live -= n;
        return true;
    }
    std::uint64_t generation = release_generation.load(std::memory_order_relaxed);

    static std::size_t class_bytes(std::size_t c) noexcept {
        if (c < 8) return (c + 1) * 64;
        const std::size_t m = 9 + (c - 8) / 4, q = (c - 8) % 4 + 1;
        return (std::size_t{1} << m) + q * (std::size_t{1} << (m - 2));
    }
    // The first class >= c with a block, or n_classes.
    std::size_t first_from(std::size_t c) const noexcept {
        for (std::size_t w = c / 64; w < n_classes / 64; ++w) {
            std::uint64_t bits = nonempty[w];
            if (w == c / 64) bits &= ~std::uint64_t{0} << (c % 64);
            if (bits) return w * 64 + static_cast<std::size_t>(std::countr_zero(bits));
        }
        return n_classes;
    }
    // A block for a request of class c: the smallest cached one of class c to c + reach, or
    // of up to small_block bytes; its size in `capacity`. Null when there is none.
    void* find(std::size_t c, std::size_t& capacity) noexcept {
        follow_release();
        const std::size_t hit = first_from(c);
        if (hit == n_classes || (hit > c + reach && class_bytes(hit) > small_block)) return nullptr;
        capacity = class_bytes(hit);
        return take(hit);
    }
    void* take(std::size_t c) noexcept {
        void* p = heads[c];
        const std::size_t n = class_bytes(c);
        TENON_UNPOISON(p, n);
        std::memcpy(&heads[c], p, sizeof(void*));
        if (!heads[c]) nonempty[c / 64] &= ~(std::uint64_t{1} << (c % 64));
        cached_bytes -= n;
        total_cached.fetch_sub(n, std::memory_order_relaxed);
        return p;
    }
    bool put(void* p, std::size_t c) noexcept {
        const std::size_t n = class_bytes(c);
        if (cached_bytes + n > cache_limit()) return false;
        std::memcpy(p, &heads[c], sizeof(void*));
        heads[c] = p;
        nonempty[c / 64] |= std::uint64_t{1} << (c % 64);
        cached_bytes += n;
        total_cached.fetch_add(n, std::memory_order_relaxed);
        TENON_POISON(p, n);
        return true;
    }
    // Hands every block back to the system.
    void release() noexcept {
        for (std::size_t c = 0; c < n_classes; ++c)
            while (heads[c]) raw_free(take(c));
    }
    // Whether release_array_cache() was called since this thread last looked.
    void follow_release() noexcept {
        const std::uint64_t g = release_generation.load(std::memory_order_relaxed);
        if (g != generation) [[unlikely]] {
            generation = g;
            release();
        }
    }
    ~BlockCache() {
        cache_gone = true;  // frees from here on (static arrays at exit) go to the system
        release();
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

std::string shape_text(const std::size_t* shape, std::size_t rank) {
    std::string s = "(";
    for (std::size_t i = 0; i < rank; ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + ")";
}

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
        throw Error("array: shape " + shape_text(shape, rank) + " is too large: " +
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

void* allocate_array(const std::size_t* shape, std::size_t rank, std::size_t elem_size, bool zero, Memory where,
                     std::size_t& block) {
    const std::size_t bytes = checked_bytes(shape, rank, elem_size);
    block = 0;
    if (bytes == 0) return nullptr;
    void* p = nullptr;
    if (where == Memory::host) {
        try {
            p = array_alloc(bytes, block);
        } catch (const std::bad_alloc&) {
            throw_alloc_failed(bytes, shape_text(shape, rank));
        }
        if (zero) std::memset(p, 0, bytes);
    } else {
        if (!(p = device_alloc(bytes, block))) throw_device_alloc_failed(bytes, shape_text(shape, rank).c_str());
        if (zero) zero_bytes_device(p, bytes);
    }
    return p;
}

void* array_alloc(std::size_t bytes, std::size_t& capacity) {
    if (!cache_on()) {
        capacity = bytes;
        return raw_alloc(bytes);
    }
    const SizeClass sc = size_class(bytes);
    BlockCache* c = cache();
    void* p = nullptr;
    if (sc.bytes > cache_limit()) {  // never cached: no rounding
        p = raw_alloc(bytes);
        capacity = bytes;
    } else if (!(c && sc.index < n_classes && (p = c->find(sc.index, capacity)))) {
        // A new block of the class's size, so that it serves the whole class when it comes back.
        p = raw_alloc(sc.bytes);
        capacity = sc.bytes;
    }
    if (c) c->used(capacity);  // every block this thread takes counts (array_free subtracts it)
    return p;
}

void* block_alloc(std::size_t bytes) {
    const SizeClass sc = size_class(bytes);
    BlockCache* c = sc.index < n_classes && cache_on() ? cache() : nullptr;
    std::size_t capacity = 0;
    // (A block of a larger class goes back into this one's list: it only serves smaller
    // requests from then on.)
    void* p = c ? c->find(sc.index, capacity) : nullptr;
    if (!p) p = raw_alloc(sc.bytes);  // always at least the class's size: block_free knows it from `bytes`
    if (c) c->used(sc.bytes);
    return p;
}

void free_array_block(void* p, std::size_t capacity, Memory where) noexcept {
    if (where == Memory::host)
        array_free(p, capacity);
    else
        device_free(p, capacity);
}

void array_free(void* p, std::size_t capacity) noexcept {
    if (!p) return;
    if (cache_on()) {
        if (BlockCache* c = cache()) {
            c->follow_release();
            // Every cached block was made at a class's size (array_alloc): capacity is exact.
            const SizeClass sc = size_class(capacity);
            if (c->unused(capacity) && sc.index < n_classes && sc.bytes == capacity && c->put(p, sc.index)) return;
        }
    }
    raw_free(p);
}

// (block_alloc made the block, and counted it, at its class's size.)
void block_free(void* p, std::size_t bytes) noexcept { array_free(p, size_class(bytes).bytes); }

}  // namespace tenon::detail

namespace tenon {

void set_array_cache_limit(std::size_t bytes_per_thread) noexcept {
    detail::limit_bytes.store(bytes_per_thread == ~std::size_t{0} ? bytes_per_thread - 1 : bytes_per_thread,
                              std::memory_order_relaxed);
}
std::size_t array_cache_limit() noexcept { return detail::cache_limit(); }

void release_array_cache() noexcept {
    detail::release_generation.fetch_add(1, std::memory_order_relaxed);
    if (detail::BlockCache* c = detail::cache()) c->follow_release();
}

std::size_t array_cache_bytes() noexcept { return detail::total_cached.load(std::memory_order_relaxed); }

}  // namespace tenon
