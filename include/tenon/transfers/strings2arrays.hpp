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
#include "tenon/util/murmurhash.hpp"

namespace tenon {

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
