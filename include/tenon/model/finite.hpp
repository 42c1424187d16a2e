// The entry points' check for NaN and inf in a model's input (docs/reliability.md,
// "Non-finite numbers"): predict, begin_update and operator() of the model called (the
// outermost entry point) and a lowered plan's predict and begin_update count the NaN and inf
// values of a float input (Floats*, and the float data of List, Ragged and Padded) and throw
// tenon-E252 naming the model, the count and the first position. On by default;
// set_check_finite_inputs(false) turns it off for the whole process.
#pragma once
#include <atomic>
#include <concepts>
#include <cstddef>
#include <string>
#include <type_traits>

#include "tenon/error.hpp"

namespace tenon {

class Ops;

namespace detail {
inline constinit std::atomic<bool> check_finite_inputs_on{true};
// Non-zero while a lowered plan runs its stages: the layers it calls see its intermediate
// arrays, not the model's input.
inline constinit thread_local int finite_check_off = 0;
struct FiniteCheckOff {
    FiniteCheckOff() noexcept { ++finite_check_off; }
    ~FiniteCheckOff() { --finite_check_off; }
    FiniteCheckOff(const FiniteCheckOff&) = delete;
    FiniteCheckOff& operator=(const FiniteCheckOff&) = delete;
};

// How many of x[0..n) are NaN or inf (vectorised: src/cpu/optimizer_kernels.cpp).
std::size_t count_nonfinite(const float* x, std::size_t n) noexcept;
// The index of x[0..n)'s first NaN or inf, n when there is none (host memory).
std::size_t first_nonfinite(const float* x, std::size_t n) noexcept;
// The same where x lives: on the model's backend when it keeps device memory (its
// count_nonfinite pass: a GPU's memory is not read on the host), else count_nonfinite.
std::size_t count_nonfinite_on(const Ops* ops, const float* x, std::size_t n);
// tenon-E252 for the input of `prefix` `who` (src/optimizer.cpp): `count` values, the first at flat index
// `first` of an array of shape shape[0..rank); `item`: the array's index in a List, or -1.
[[noreturn]] void throw_nonfinite_input(const char* prefix, const std::string& who, const char* call, const char* what,
                                        std::size_t count, const std::size_t* shape, std::size_t rank,
                                        long item, const float* data);

template <class X>
concept float_array = requires(const X& x) {
    X::rank;
    { x.data() } -> std::convertible_to<const float*>;
    x.size();
    x.shape(0);
};

template <class X>
concept float_list = requires { typename X::array_type; } && float_array<typename X::array_type>;

// Counts and reports the non-finite values of x: a float array, a List of them, a Ragged /
// Padded of float data, SparseFeatures' values, or either side of a pair; any other input
// (ids, strings) is not checked.
// `ops`: the model's backend (the input lives in its memory), or null for host memory.
template <class X>
void check_finite(const char* prefix, const std::string& who, const char* call, const X& x,
                  const Ops* ops = nullptr) {
    if constexpr (requires { typename X::data_type; x.data(); }) {
        if constexpr (float_array<std::remove_cvref_t<decltype(x.data())>>) {
            const auto& d = x.data();
            if (const std::size_t bad = count_nonfinite_on(ops, d.data(), d.size()))
                throw_nonfinite_input(prefix, who, call, "data", bad, d.shape().data(), d.shape().size(), -1, d.data());
        }
    } else if constexpr (float_array<X>) {
        if (const std::size_t bad = count_nonfinite_on(ops, x.data(), x.size()))
            throw_nonfinite_input(prefix, who, call, "", bad, x.shape().data(), x.shape().size(), -1, x.data());
    } else if constexpr (requires { x.keys(); x.values().data(); }) {  // SparseFeatures: its values
        const auto& v = x.values();
        if (const std::size_t bad = count_nonfinite_on(ops, v.data(), v.size()))
            throw_nonfinite_input(prefix, who, call, "values", bad, v.shape().data(), v.shape().size(), -1, v.data());
    } else if constexpr (requires { x.first; x.second; }) {  // a pair (CauchySimilarity, siamese): both
        check_finite(prefix, who, call, x.first, ops);
        check_finite(prefix, who, call, x.second, ops);
    } else if constexpr (float_list<X>) {
        std::size_t bad = 0;
        long first = -1;
        for (std::size_t i = 0; i < x.size(); ++i) {
            const std::size_t b = count_nonfinite_on(ops, x[i].data(), x[i].size());
            if (b && first < 0) first = static_cast<long>(i);
            bad += b;
        }
        if (bad) {
            const auto& a = x[static_cast<std::size_t>(first)];
            throw_nonfinite_input(prefix, who, call, "", bad, a.shape().data(), a.shape().size(), first, a.data());
        }
    }
}

// The check as the entry points make it: only when on, and not inside a plan.
template <class X>
void check_finite_input(const char* prefix, const std::string& who, const char* call, const X& x,
                        const Ops* ops = nullptr) {
    if (finite_check_off == 0 && check_finite_inputs_on.load(std::memory_order_relaxed))
        check_finite(prefix, who, call, x, ops);
}
}  // namespace detail

// Turns the entry points' check for NaN and inf in a model's input on (the default) or off,
// for every model and thread of the process (tenon-E252).
inline void set_check_finite_inputs(bool on) noexcept {
    detail::check_finite_inputs_on.store(on, std::memory_order_relaxed);
}
inline bool check_finite_inputs() noexcept { return detail::check_finite_inputs_on.load(std::memory_order_relaxed); }

}  // namespace tenon
