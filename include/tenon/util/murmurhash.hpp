// MurmurHash3_x86_32 (Austin Appleby's public-domain reference), as the murmurhash package
// that Thinc and spaCy use: of any bytes (strings2arrays' hash_unicode), and of one uint64 key
// (SparseLinear's MurmurHash3_x86_32_uint64 in thinc/layers/sparselinear.pyx: the key's 8
// bytes little-endian, so the same value as murmurhash3_x86_32(&key, 8, seed) on a
// little-endian machine, on any machine).
#pragma once
#include <cstddef>
#include <cstdint>

namespace tenon {

namespace detail::murmur {
constexpr std::uint32_t rotl(std::uint32_t x, int r) noexcept { return (x << r) | (x >> (32 - r)); }
// One 4-byte block's scrambled value (the tail's too).
constexpr std::uint32_t scramble(std::uint32_t k1) noexcept { return rotl(k1 * 0xcc9e2d51u, 15) * 0x1b873593u; }
// Mixes one block into the running hash.
constexpr std::uint32_t mix(std::uint32_t h1, std::uint32_t k1) noexcept {
    return rotl(h1 ^ scramble(k1), 13) * 5 + 0xe6546b64u;
}
// The finalisation over the length in bytes.
constexpr std::uint32_t finish(std::uint32_t h1, std::size_t len) noexcept {
    h1 ^= static_cast<std::uint32_t>(len);
    h1 ^= h1 >> 16;
    h1 *= 0x85ebca6bu;
    h1 ^= h1 >> 13;
    h1 *= 0xc2b2ae35u;
    return h1 ^ (h1 >> 16);
}
}  // namespace detail::murmur

// MurmurHash3_x86_32 (Austin Appleby's public-domain reference, little-endian reads), as the
// murmurhash package that Thinc and spaCy use.
inline std::uint32_t murmurhash3_x86_32(const void* key, std::size_t len, std::uint32_t seed = 0) noexcept {
    namespace m = detail::murmur;
    const auto* data = static_cast<const unsigned char*>(key);
    const std::size_t nblocks = len / 4;
    std::uint32_t h1 = seed;
    for (std::size_t i = 0; i < nblocks; ++i) {
        const unsigned char* p = data + 4 * i;
        h1 = m::mix(h1, std::uint32_t(p[0]) | std::uint32_t(p[1]) << 8 | std::uint32_t(p[2]) << 16 |
                            std::uint32_t(p[3]) << 24);
    }
    const unsigned char* tail = data + 4 * nblocks;
    std::uint32_t k1 = 0;
    switch (len & 3) {
        case 3: k1 ^= std::uint32_t(tail[2]) << 16; [[fallthrough]];
        case 2: k1 ^= std::uint32_t(tail[1]) << 8; [[fallthrough]];
        case 1:
            k1 ^= tail[0];
            h1 ^= m::scramble(k1);
    }
    return m::finish(h1, len);
}

// The hash of one 8-byte key read as two little-endian 32-bit blocks (no tail): Thinc's
// MurmurHash3_x86_32_uint64(key, seed).
constexpr std::uint32_t murmurhash3_x86_32_uint64(std::uint64_t key, std::uint32_t seed) noexcept {
    namespace m = detail::murmur;
    const std::uint32_t h1 = m::mix(m::mix(seed, static_cast<std::uint32_t>(key)), static_cast<std::uint32_t>(key >> 32));
    return m::finish(h1, 8);
}

}  // namespace tenon
