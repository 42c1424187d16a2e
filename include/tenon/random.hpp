// The random numbers behind initialisers and dropout: one process-wide generator
// (xoshiro256**), reseeded by fix_random_seed so that the same seed gives the same weights
// and the same training run. Not for use from several training threads at once; predict
// never draws random numbers.
#pragma once
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "tenon/backend/functors.hpp"

namespace tenon {

class Rng {
public:
    explicit Rng(std::uint64_t seed = 0) { seed_with(seed); }
    void seed_with(std::uint64_t seed) {
        // splitmix64 spreads one seed over the four words of state.
        for (auto& w : s_) {
            seed += 0x9E3779B97F4A7C15ull;
            std::uint64_t z = seed;
            z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
            z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
            w = z ^ (z >> 31);
        }
        has_spare_ = false;
    }
    std::uint64_t next() noexcept {
        const std::uint64_t result = rotl(s_[1] * 5, 7) * 9, t = s_[1] << 17;
        s_[2] ^= s_[0];
        s_[3] ^= s_[1];
        s_[1] ^= s_[2];
        s_[0] ^= s_[3];
        s_[2] ^= t;
        s_[3] = rotl(s_[3], 45);
        return result;
    }
    // Uniform in [0, 1), 24 random bits.
    float uniform() noexcept { return static_cast<float>(next() >> 40) * (1.0f / 16777216.0f); }
    double uniform(double lo, double hi) noexcept {
        return lo + (hi - lo) * (static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0));
    }
    // Standard normal (Box-Muller, one value cached).
    double normal() noexcept {
        if (has_spare_) {
            has_spare_ = false;
            return spare_;
        }
        double u1 = 0.0;
        while (u1 <= 0.0) u1 = uniform(0.0, 1.0);
        const double u2 = uniform(0.0, 1.0);
        const double r = std::sqrt(-2.0 * std::log(u1));
        spare_ = r * std::sin(6.283185307179586 * u2);
        has_spare_ = true;
        return r * std::cos(6.283185307179586 * u2);
    }
    // An index in [0, n).
    std::uint64_t below(std::uint64_t n) noexcept { return n ? next() % n : 0; }

    // The whole state (checkpoints save it: tenon/io/serialize.hpp).
    struct State {
        std::uint64_t s[4];
        double spare;
        bool has_spare;
    };
    State state() const noexcept { return {{s_[0], s_[1], s_[2], s_[3]}, spare_, has_spare_}; }
    void set_state(const State& st) noexcept {
        for (int i = 0; i < 4; ++i) s_[i] = st.s[i];
        spare_ = st.spare;
        has_spare_ = st.has_spare;
    }

private:
    static std::uint64_t rotl(std::uint64_t x, int k) noexcept { return (x << k) | (x >> (64 - k)); }
    std::uint64_t s_[4];
    double spare_ = 0.0;
    bool has_spare_ = false;
};

// The generator initialisers, dropout and shuffling draw from.
inline Rng& global_rng() noexcept {
    static Rng rng(0);
    return rng;
}

// A dropout mask: m[j] = keep (kept, with probability 1 - rate) or 0 for the elements
// first .. first + n - 1 of a call whose key is one draw of the generator (dropout_key).
// Element j's number is splitmix64's output function of key + (j + 1) * golden ratio, a
// counter-based stream: any range can be filled on any thread, in any order, and gives the
// same mask, so the lowered plan fills rows in parallel and equals the Dropout layer for
// every thread count. The test is on 24 bits, k >= ceil(rate * 2^24) (the same as
// uniform() >= rate), and a select without a branch (a random mask mispredicts often).
inline std::uint64_t dropout_key(Rng& rng) noexcept { return rng.next(); }
// The threshold on the 24 bits for a rate (fn::dropout_mask_bits, also a device backend's).
inline std::uint64_t dropout_threshold(double rate) noexcept { return fn::dropout_threshold(rate); }
inline void dropout_mask(std::uint64_t key, std::uint64_t first, float* m, std::size_t n, double rate,
                         float keep) noexcept {
    fn::dropout_mask_bits(key, first, m, n, dropout_threshold(rate), std::bit_cast<std::uint32_t>(keep));
}

namespace detail {
// A training pass run as inference: model(X, false) on a model that runs its plan (Thinc's
// is_train=False) is the plan's training pass with no dropout drawn anywhere in it (the fused
// dropouts, the tables' column masks, the layers a stage runs), for its forward pass and its
// backprop alike (CallState::inference). Set for a scope by InferencePass; thread-local.
inline constinit thread_local bool inference_pass = false;
class InferencePass {
public:
    explicit InferencePass(bool on) noexcept : was_(inference_pass) { inference_pass = was_ || on; }
    ~InferencePass() { inference_pass = was_; }
    InferencePass(const InferencePass&) = delete;
    InferencePass& operator=(const InferencePass&) = delete;

private:
    bool was_;
};
}  // namespace detail

// Same seed -> same weights -> same run (as Thinc's fix_random_seed).
inline void fix_random_seed(std::uint64_t seed) noexcept { global_rng().seed_with(seed); }

}  // namespace tenon
