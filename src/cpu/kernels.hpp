// Kernels private to the library (compiled with their own flags; see meson.build).
#pragma once
#include <cstddef>

namespace tenon::cpu {

// sum of g[i]^2 (not finite when a g[i] is NaN or inf, or when the float partial sums overflow)
double sum_squares(const float* g, std::size_t n);
// How many of x[0..n) are NaN or inf (the exponent bits all ones), vectorised; also
// tenon::detail::count_nonfinite for the entry points' input check.
std::size_t count_nonfinite(const float* x, std::size_t n);
// Thinc's Adam step on one parameter with the gradient scaled by gscale (clipping), weight
// decay factor wd, the moving average A (or null); zeroes G when zero_g.
void adam_pass(float* W, float* G, float* m1, float* m2, float* A, std::size_t n, float gscale, float b1, float b2,
               float lr_t, float eps, float decay_keep, float wd, bool zero_g);
// Plain SGD with the same conventions.
void sgd_pass(float* W, float* G, float* A, std::size_t n, float gscale, float lr, float decay_keep, float wd,
              bool zero_g);

}  // namespace tenon::cpu
