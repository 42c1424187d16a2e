// strings2arrays(): std::vector<Strings> -> List<Keys2d>. Each sequence of strings becomes a
// (n, 1) array of their hashes, as thinc/layers/strings2arrays.py: murmurhash's
// hash_unicode (MurmurHash3_x86_32 of the UTF-8 bytes, seed 0), a signed 32-bit value that
// numpy widens to uint64 (so a negative hash h is stored as 2^64 + h). The same bits as
// Thinc's, so hashes computed here and there agree. No gradient: backprop returns an empty
// batch (Thinc returns []).
#pragma once
#include <cstdint>
#include <cstring>
#include <string_view>
#include <utility>
#include <vector>

#include "tenon/model/layer.hpp"
#include "tenon/types/list.hpp"
#include "tenon/transfers/strings.hpp"

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

// murmurhash.hash_unicode(s): the hash of s's UTF-8 bytes as a signed 32-bit value.
inline std::int32_t hash_unicode(std::string_view s, std::uint32_t seed = 0) noexcept {
    return static_cast<std::int32_t>(murmurhash3_x86_32(s.data(), s.size(), seed));
}

class Strings2Arrays : public Layer<Strings2Arrays, std::vector<Strings>, List<Keys2d>> {
    using Base = Layer<Strings2Arrays, std::vector<Strings>, List<Keys2d>>;
    friend Base;

public:
    Strings2Arrays() : Base("strings2arrays", {}, {}) { this->mark_initialized(); }

    struct Backprop {
        std::vector<Strings> operator()(const List<Keys2d>&) const { return {}; }
    };

private:
    template <class XP, class YP>
    void init_impl(XP, YP) {}
    List<Keys2d> predict_impl(const std::vector<Strings>& Xs) const {
        List<Keys2d> out;
        out.reserve(Xs.size());
        for (const auto& X : Xs) {
            Keys2d a({X.size(), 1}, uninitialized);
            // int32 -> int64 -> uint64: numpy's sign-extending cast of the Python int.
            for (std::size_t i = 0; i < X.size(); ++i)
                a[i] = static_cast<std::uint64_t>(static_cast<std::int64_t>(hash_unicode(X[i])));
            out.push_back(std::move(a));
        }
        return out;
    }
    std::pair<List<Keys2d>, Backprop> forward_impl(const std::vector<Strings>& Xs, bool) {
        return {predict_impl(Xs), Backprop{}};
    }
};

inline Strings2Arrays strings2arrays() { return {}; }

}  // namespace tenon
