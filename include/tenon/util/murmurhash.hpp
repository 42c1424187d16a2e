// MurmurHash3_x86_32 (Austin Appleby's public-domain reference), as the murmurhash package
// that Thinc and spaCy use: of any bytes (strings2arrays' hash_unicode), and of one uint64 key
// (SparseLinear's MurmurHash3_x86_32_uint64 in thinc/layers/sparselinear.pyx: the key's 8
// bytes little-endian, so the same value as murmurhash3_x86_32(&key, 8, seed) on a
// little-endian machine, on any machine).
#pragma once
#include <cstddef>
#include <cstdint>

namespace tenon {

// MurmurHash3_x86_32 (Austin Appleby's public-domain reference, little-endian reads), as the
// murmurhash package that Thinc and spaCy use.
inline std::uint32_t murmurhash3_x86_32(const void* key, std::size_t len, std::uint32_t seed = 0) noexcept {
    const auto* data = static_cast<const unsigned char*>(key);
    const std::size_t nblocks = len / 4;
    std::uint32_t h1 = seed;
    constexpr std::uint32_t c1 = 0xcc9e2d51, c2 = 0x1b873593;
    auto rotl = [](std::uint32_t x, int r) { return (x << r) | (x >> (32 - r)); };
    for (std::size_t i = 0; i < nblocks; ++i) {
        const unsigned char* p = data + 4 * i;
        std::uint32_t k1 = std::uint32_t(p[0]) | std::uint32_t(p[1]) << 8 | std::uint32_t(p[2]) << 16 |
                           std::uint32_t(p[3]) << 24;
        k1 *= c1;
        k1 = rotl(k1, 15);
        k1 *= c2;
        h1 ^= k1;
        h1 = rotl(h1, 13);
        h1 = h1 * 5 + 0xe6546b64;
    }
    const unsigned char* tail = data + 4 * nblocks;
    std::uint32_t k1 = 0;
    switch (len & 3) {
        case 3: k1 ^= std::uint32_t(tail[2]) << 16; [[fallthrough]];
        case 2: k1 ^= std::uint32_t(tail[1]) << 8; [[fallthrough]];
        case 1:
            k1 ^= tail[0];
            k1 *= c1;
            k1 = rotl(k1, 15);
            k1 *= c2;
            h1 ^= k1;
    }
    h1 ^= static_cast<std::uint32_t>(len);
    h1 ^= h1 >> 16;
    h1 *= 0x85ebca6b;
    h1 ^= h1 >> 13;
    h1 *= 0xc2b2ae35;
    h1 ^= h1 >> 16;
    return h1;
}

// The hash of one 8-byte key read as two little-endian 32-bit blocks (no tail): Thinc's
// MurmurHash3_x86_32_uint64(key, seed).
constexpr std::uint32_t murmurhash3_x86_32_uint64(std::uint64_t key, std::uint32_t seed) noexcept {
    constexpr std::uint32_t c1 = 0xcc9e2d51, c2 = 0x1b873593;
    std::uint32_t h1 = seed;
    for (int half = 0; half < 2; ++half) {
        std::uint32_t k1 = static_cast<std::uint32_t>(half == 0 ? key : key >> 32);
        k1 *= c1;
        k1 = (k1 << 15) | (k1 >> 17);
        k1 *= c2;
        h1 ^= k1;
        h1 = (h1 << 13) | (h1 >> 19);
        h1 = h1 * 5 + 0xe6546b64;
    }
    h1 ^= 8u;
    h1 ^= h1 >> 16;
    h1 *= 0x85ebca6b;
    h1 ^= h1 >> 13;
    h1 *= 0xc2b2ae35;
    h1 ^= h1 >> 16;
    return h1;
}

}  // namespace tenon
