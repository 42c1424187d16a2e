// Array memory: 64-byte aligned, with a per-thread cache of freed blocks by exact size.
// Training and serving allocate the same few sizes at every step: after the first step of a
// batch size every array comes from the cache, so a step makes no heap allocation
// (tests/unit/test_alloc.cpp), and large blocks are not mapped afresh each time (glibc serves
// each with a new mmap, whose page faults cost more than the arithmetic at batch 32). The
// cache is bounded; blocks beyond the bound go back to the system.
#include <cstddef>
#include <new>
#include <unordered_map>
#include <vector>

#include "tenon/types/array.hpp"

namespace tenon::detail {
namespace {

constexpr std::size_t cache_limit = std::size_t{256} << 20;  // per thread

void* raw_alloc(std::size_t bytes) { return ::operator new(bytes, std::align_val_t{array_alignment}); }
void raw_free(void* p) noexcept { ::operator delete(p, std::align_val_t{array_alignment}); }

struct BlockCache {
    std::unordered_map<std::size_t, std::vector<void*>> free_blocks;
    std::size_t cached_bytes = 0;
    ~BlockCache() {
        for (auto& [bytes, blocks] : free_blocks)
            for (void* p : blocks) raw_free(p);
    }
};

BlockCache& cache() {
    thread_local BlockCache c;
    return c;
}

}  // namespace

void* array_alloc(std::size_t bytes) {
    {
        BlockCache& c = cache();
        auto it = c.free_blocks.find(bytes);
        if (it != c.free_blocks.end() && !it->second.empty()) {
            void* p = it->second.back();
            it->second.pop_back();
            c.cached_bytes -= bytes;
            return p;
        }
    }
    return raw_alloc(bytes);
}

void array_free(void* p, std::size_t bytes) noexcept {
    if (!p) return;
    {
        BlockCache& c = cache();
        if (c.cached_bytes + bytes <= cache_limit) {
            try {
                c.free_blocks[bytes].push_back(p);
                c.cached_bytes += bytes;
                return;
            } catch (...) {  // no memory for the bookkeeping: free the block instead
            }
        }
    }
    raw_free(p);
}

}  // namespace tenon::detail
