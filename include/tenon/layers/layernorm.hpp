// LayerNorm: normalise each row to mean 0 and variance 1 (epsilon 1e-8 on the variance, as
// Thinc), then scale by G and shift by b. nO == nI. After thinc/layers/layernorm.py.
#pragma once
#include <cmath>
#include <utility>

#include "tenon/lower/lowered_as.hpp"
#include "tenon/model/layer.hpp"

namespace tenon {

namespace detail {
inline constexpr float layernorm_epsilon = 1e-8f;

// One row of LayerNorm: y = G * (x - mean) / sqrt(var + eps) + b, keeping the normalised
// row (xh) and 1/std (rstd) when asked. x may be y (the lowered plan works in place).
inline void layernorm_row(const float* x, float* y, std::size_t n, const float* G, const float* b, float* xh,
                          float* rstd) {
    double mean = 0.0;
    for (std::size_t i = 0; i < n; ++i) mean += x[i];
    mean /= double(n);
    double var = 0.0;
    for (std::size_t i = 0; i < n; ++i) var += (x[i] - mean) * (x[i] - mean);
    var /= double(n);
    const auto rs = static_cast<float>(1.0 / std::sqrt(var + double(layernorm_epsilon)));
    const auto mu = static_cast<float>(mean);
    for (std::size_t i = 0; i < n; ++i) {
        const float h = (x[i] - mu) * rs;
        if (xh) xh[i] = h;
        y[i] = h * G[i] + b[i];
    }
    if (rstd) *rstd = rs;
}

// Its backward on one row: adds to dG and db and writes dx (dy may be dx: in place).
inline void layernorm_row_backward(const float* dy, float* dx, const float* xh, float rs, std::size_t n,
                                   const float* G, float* dG, float* db) {
    double sum_d = 0.0, sum_dx = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
        const float g = dy[i];
        db[i] += g;
        dG[i] += g * xh[i];
        const float d = g * G[i];
        dx[i] = d;
        sum_d += d;
        sum_dx += double(d) * xh[i];
    }
    const float k = rs / static_cast<float>(n), sd = static_cast<float>(sum_d), sdx = static_cast<float>(sum_dx),
                fn = static_cast<float>(n);
    for (std::size_t i = 0; i < n; ++i) dx[i] = k * (fn * dx[i] - sd - xh[i] * sdx);
}
}  // namespace detail

template <std::size_t NI = dyn>
class LayerNorm : public Layer<LayerNorm<NI>, Floats2d, Floats2d> {
    using Base = Layer<LayerNorm<NI>, Floats2d, Floats2d>;
    friend Base;
    // E012: a static width of 0.
    static_assert(sizeof(check::width_check<NI, LayerNorm, check::nI>) > 0);

public:
    // A static width of 0 fails with E012; chains then see dyn (no second error).
    static constexpr std::size_t static_nO = NI == 0 ? dyn : NI, static_nI = static_nO;
    static constexpr float epsilon = detail::layernorm_epsilon;

    explicit LayerNorm(std::size_t nI = NI) : Base("layernorm", {{"nO", NI}, {"nI", NI}}, {{"G", {"nI"}}, {"b", {"nI"}}}) {
        if (nI != dyn) {
            this->set_dim("nI", nI);
            this->set_dim("nO", nI);
        }
    }

    // The same layer with a static width (chain's width propagation rebinds a dyn nI; the
    // output width follows, so the width keeps flowing to the next layer).
    template <std::size_t N2>
    using with_nI = LayerNorm<N2>;
    static constexpr bool nO_is_nI = true;
    // lower(): one operation of the row pass before it (lower/lowered_as.hpp).
    static constexpr lowering::RowOpStage lowered_as{lowering::OpKind::layernorm};
    template <std::size_t N2>
        requires(NI != N2)
    explicit LayerNorm(LayerNorm<N2>&& o) : Base(static_cast<Node&&>(o)) {
        this->fix_dim(0, NI);
        this->fix_dim(1, NI);
    }

    struct Backprop {
        LayerNorm* layer = nullptr;
        Floats2d Xhat;  // the normalised input
        Floats1d rstd;  // 1 / sqrt(var + eps) per row
        Floats2d operator()(Floats2dCView dY) const {
            const std::size_t rows = Xhat.shape(0), n = Xhat.shape(1);
            detail::check_same_shape(*layer, dY, rows, n);
            Floats2d dX({rows, n}, uninitialized);
            const float* G = layer->param(0).value.data();
            float* dG = layer->grad_data(0);
            float* db = layer->grad_data(1);
            for (std::size_t r = 0; r < rows; ++r)
                detail::layernorm_row_backward(dY.data() + r * n, dX.data() + r * n, Xhat.data() + r * n, rstd[r], n,
                                               G, dG, db);
            return dX;
        }
    };

private:
    void init_impl(const Floats2dCView* X, const Floats2dCView* Y) {
        if (X) {
            this->resolve_dim(1, X->shape(1));
            this->resolve_dim(0, X->shape(1));
        } else if (Y) {
            this->resolve_dim(1, Y->shape(1));
            this->resolve_dim(0, Y->shape(1));
        }
        const std::size_t n = this->require_dim(1);
        this->resolve_dim(0, n);
        this->allocate_param(0, {n});
        this->allocate_param(1, {n});
        this->param(0).value.fill(1.0f);
        this->mark_initialized();
    }

    // Normalises X into Y; optionally keeps Xhat and rstd for the backward pass.
    void normalize(Floats2dCView X, float* Y, float* Xhat, float* rstd) const {
        const std::size_t rows = X.shape(0), n = this->dim(1);
        detail::check_width(*this, X, n);
        const float* G = this->param(0).value.data();
        const float* b = this->param(1).value.data();
        for (std::size_t r = 0; r < rows; ++r)
            detail::layernorm_row(X.data() + r * n, Y + r * n, n, G, b, Xhat ? Xhat + r * n : nullptr,
                                  rstd ? rstd + r : nullptr);
    }

    Floats2d predict_impl(Floats2dCView X) const {
        detail::check_width(*this, X, this->dim(1));
        Floats2d Y({X.shape(0), this->dim(0)}, uninitialized);
        normalize(X, Y.data(), nullptr, nullptr);
        return Y;
    }

    std::pair<Floats2d, Backprop> forward_impl(Floats2dCView X, bool /*is_train*/) {
        detail::check_width(*this, X, this->dim(1));
        const std::size_t rows = X.shape(0), n = this->dim(1);
        Backprop bp{this, Floats2d({rows, n}, uninitialized), Floats1d({rows}, uninitialized)};
        Floats2d Y({rows, n}, uninitialized);
        normalize(X, Y.data(), bp.Xhat.data(), bp.rstd.data());
        return {std::move(Y), std::move(bp)};
    }
};

}  // namespace tenon
