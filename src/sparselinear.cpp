// SparseLinear's checks and hashing (include/tenon/layers/sparselinear.hpp), compiled once.
#include <string>

#include "tenon/layers/sparselinear.hpp"

namespace tenon::detail {

void sparselinear_setup(Node& layer, const SparseLinearOptions& o) {
    if (o.length == 0 || o.length > (std::size_t{1} << 32))
        throw Error(layer.name() + ": length (the hash table's size per class) must be in [1, 2^32], found " +
                        std::to_string(o.length),
                    "tenon-E276");
    layer.set_dim("length", o.length);
    if (o.nO != dyn) layer.set_dim("nO", o.nO);
    layer.set_fixed_attr("v1_indexing", o.v1_indexing);
}

void sparselinear_indices(const Keys1d& keys, std::size_t length, bool v1, std::uint32_t* idx) noexcept {
    const std::size_t n = keys.size();
    const auto mask = static_cast<std::uint32_t>(length - 1);  // (length <= 2^32)
    // v1: Thinc's hash & (nr_weight - 1); v2: hash % length, which is the same mask for a
    // power of two (the default 2^18) and a 32-bit division otherwise (a 32-bit hash % 2^32 is
    // itself).
    if (v1 || (length & (length - 1)) == 0) {
        for (std::size_t f = 0; f < n; ++f) {
            const std::uint64_t k = keys[f];
            idx[2 * f] = murmurhash3_x86_32_uint64(k, 0) & mask;
            idx[2 * f + 1] = murmurhash3_x86_32_uint64(k, 1) & mask;
        }
    } else {
        const auto len = static_cast<std::uint32_t>(length);
        for (std::size_t f = 0; f < n; ++f) {
            const std::uint64_t k = keys[f];
            idx[2 * f] = murmurhash3_x86_32_uint64(k, 0) % len;
            idx[2 * f + 1] = murmurhash3_x86_32_uint64(k, 1) % len;
        }
    }
}

}  // namespace tenon::detail
