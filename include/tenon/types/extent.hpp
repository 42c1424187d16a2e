// extent_t and dyn: how a static extent or width is written in a type (Array<float, dyn, 4>,
// Relu<64, dyn>), and how it is read at run time.
#pragma once
#include <cstddef>

namespace tenon {

// A static extent or width, as a template argument: a number, or dyn. Signed, so that a
// compiler's own messages print dyn as -1 (as Eigen's Dynamic), not as 18446744073709551615.
using extent_t = std::ptrdiff_t;

// dyn: an extent or width not known at compile time. As a template argument (an extent_t) it
// is -1; as a run-time dim (a std::size_t) it is the largest value, which no dim has. The two
// are the same bits: static_cast between extent_t and std::size_t maps one onto the other.
struct dyn_t {
    constexpr operator extent_t() const noexcept { return -1; }  // NOLINT(google-explicit-constructor)
    constexpr operator std::size_t() const noexcept { return static_cast<std::size_t>(-1); }  // NOLINT
    friend constexpr bool operator==(dyn_t, extent_t e) noexcept { return e == -1; }
    friend constexpr bool operator==(dyn_t, std::size_t d) noexcept { return d == static_cast<std::size_t>(-1); }
};
inline constexpr dyn_t dyn{};
// A static extent or width as a run-time dim: a number stays the number, dyn (-1) becomes the
// run-time dyn. (The explicit conversion that -Wsign-conversion asks for, said once.)
constexpr std::size_t as_dim(extent_t e) noexcept { return static_cast<std::size_t>(e); }
// Whether a static width can be a layer's: a number >= 1, or dyn. Any other (0, or negative
// and not dyn) is tenon-E012 at the layer (check::width_check).
constexpr bool valid_width(extent_t w) noexcept { return w >= 1 || w == -1; }
// A layer's static width as the widths around it see it: one that fails E012 counts as dyn,
// so that the layer's error is the only one.
constexpr extent_t usable_width(extent_t w) noexcept { return w >= 1 ? w : -1; }

}  // namespace tenon
