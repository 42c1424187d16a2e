// LayerNorm: normalise each row to mean 0 and variance 1 (epsilon 1e-8 on the variance, as
// Thinc), then scale by G and shift by b. nO == nI. After thinc/layers/layernorm.py.
#pragma once
#include <cmath>
#include <utility>

#include "tenon/lower/lowered_as.hpp"
#include "tenon/model/layer.hpp"

namespace tenon {

template <extent_t NI = dyn>
class LayerNorm : public Layer<LayerNorm<NI>, Floats2d, Floats2d> {
    using Base = Layer<LayerNorm<NI>, Floats2d, Floats2d>;
    friend Base;
    // E012: a static width of 0.
    static_assert(sizeof(check::width_check<NI, LayerNorm, check::nI>) > 0);

public:
    // A static width of 0 fails with E012; chains then see dyn (no second error).
    static constexpr extent_t static_nO = usable_width(NI), static_nI = static_nO;
    static constexpr float epsilon = fn::layernorm_epsilon;

    explicit LayerNorm(std::size_t nI = as_dim(NI)) : Base("layernorm", {{"nO", as_dim(NI)}, {"nI", as_dim(NI)}}, {{"G", {"nI"}}, {"b", {"nI"}}}) {
        if (nI != dyn) {
            this->set_dim("nI", nI);
            this->set_dim("nO", nI);
        }
    }

    // The same layer with a static width (chain's width propagation rebinds a dyn nI; the
    // output width follows, so the width keeps flowing to the next layer).
    template <extent_t N2>
    using with_nI = LayerNorm<N2>;
    static constexpr bool nO_is_nI = true;
    // lower(): one operation of the row pass before it (lower/lowered_as.hpp).
    static constexpr lowering::RowOpStage lowered_as{lowering::OpKind::layernorm};
    template <extent_t N2>
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
            layer->ops().layernorm_backward(dY.data(), dX.data(), Xhat.data(), rstd.data(), rows, n, G, dG, db);
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
        this->ops().layernorm(X.data(), Y, rows, n, G, b, Xhat, rstd);
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
