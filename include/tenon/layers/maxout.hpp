// Maxout: nP affine pieces per output, Y[:, o] = max_p (X W[o, p]^T + b[o, p]); W (nO, nP, nI),
// b (nO, nP); ties go to the first piece. Options `dropout` and `normalize` as Relu.
// After thinc/layers/maxout.py.
#pragma once
#include <optional>
#include <utility>

#include "tenon/init/init.hpp"
#include "tenon/layers/detail/affine.hpp"
#include "tenon/layers/detail/norm_dropout.hpp"
#include "tenon/lower/lowered_as.hpp"
#include "tenon/model/layer.hpp"

namespace tenon {

struct MaxoutOptions {
    std::size_t nO = dyn;
    std::size_t nI = dyn;
    std::size_t nP = dyn;  // pieces per output; dyn: the type's NP, or Thinc's default 3
    Init init_W = {};      // empty: glorot_uniform_init
    Init init_b = {};      // empty: zero_init
    std::optional<double> dropout = {};
    bool normalize = false;
};

template <std::size_t NO = dyn, std::size_t NI = dyn, std::size_t NP = dyn>
class Maxout : public Layer<Maxout<NO, NI, NP>, Floats2d, Floats2d> {
    using Base = Layer<Maxout<NO, NI, NP>, Floats2d, Floats2d>;
    friend Base;
    // E012: a static width of 0.
    static_assert(sizeof(check::width_check<NO, Maxout, check::nO>) + sizeof(check::width_check<NI, Maxout, check::nI>) +
                      sizeof(check::width_check<NP, Maxout, check::nP>) >
                  0);

public:
    // A static width of 0 fails with E012; chains then see dyn (no second error).
    static constexpr std::size_t static_nO = NO == 0 ? dyn : NO, static_nI = NI == 0 ? dyn : NI, static_nP = NP;
    // lower(): the product, the largest piece per output, then the tail (lower/lowered_as.hpp).
    static constexpr lowering::MaxoutStage lowered_as{"maxout"};

    // Without options: out of line (see DenseOptions), so that a caller's long chain of
    // Maxout() makes no options object per layer.
    [[gnu::noinline]] explicit Maxout() : Maxout(MaxoutOptions{}) {}
    explicit Maxout(MaxoutOptions o)
        : Base(Node::maxout_node(NO, NI, NP, o.nO, o.nI, o.nP)),
          init_W_(o.init_W ? o.init_W : Init(glorot_uniform_init)),
          init_b_(o.init_b ? o.init_b : Init(zero_init)),
          tail_(o.normalize, o.dropout) {}

    // The same layer with a static nI (chain's width propagation rebinds a dyn nI).
    template <std::size_t N2>
        requires(NO != 0 && NP != 0)  // not for a layer that fails E012
    using with_nI = Maxout<NO, N2, NP>;
    template <std::size_t N2>
        requires(NI != N2)
    explicit Maxout(Maxout<NO, N2, NP>&& o)
        : Base(static_cast<Node&&>(o)),
          init_W_(std::move(o.init_W_)),
          init_b_(std::move(o.init_b_)),
          tail_(std::move(o.tail_)) {
        this->fix_dim(1, NI);
    }

    struct Backprop {
        Maxout* layer = nullptr;
        Floats2d X;
        Array<std::int32_t, dyn, dyn> which;  // the winning piece per output
        typename detail::NormDropout<NO>::Backprop tail;
        Floats2d operator()(Floats2dCView dY) const {
            const std::size_t rows = X.shape(0), nO = layer->dim(0), nP = layer->dim(2);
            detail::check_same_shape(*layer, dY, rows, nO);  // before the tail, so the error names this layer
            Floats2d d = layer->tail_.backward(dY, tail);
            const Ops& ops = layer->ops();
            Floats2d dZ({rows, nO * nP}, uninitialized);  // zero except at the winners
            ops.maxout_backward(d.data(), which.data(), rows, nO, nP, dZ.data());
            Floats2d dX({rows, X.shape(1)}, uninitialized);
            detail::affine_backward(ops, dZ.data(), X, layer->param(0).value.data(), nO * nP,
                                    layer->grad_data(0), layer->grad_data(1), dX.data());
            return dX;
        }
    };

    void for_each_child(const std::function<void(Node&)>& f) override { tail_.for_each_child(f); }

private:
    template <std::size_t, std::size_t, std::size_t>
    friend class Maxout;

    void init_impl(const Floats2dCView* X, const Floats2dCView* Y) {
        if (X) this->resolve_dim(1, X->shape(1));
        if (Y) this->resolve_dim(0, Y->shape(1));
        const std::size_t nO = this->require_dim(0), nI = this->require_dim(1), nP = this->require_dim(2);
        this->allocate_param(0, {nO, nP, nI});
        this->allocate_param(1, {nO, nP});
        init_W_(this->get_param("W"));
        init_b_(this->get_param("b"));
        tail_.initialize(nO);
        this->mark_initialized();
    }

    // Z = X W^T over all nO * nP pieces, then the max of Z + b per output (and its index).
    Floats2d pieces(Floats2dCView X, std::int32_t* which) const {
        detail::check_width(*this, X, this->dim(1));
        const std::size_t rows = X.shape(0), nO = this->dim(0), nP = this->dim(2);
        const Ops& ops = this->ops();
        Floats2d Z({rows, nO * nP}, uninitialized);
        detail::affine_product(ops, X, this->param(0).value.data(), nO * nP, Z.data());
        Floats2d best({rows, nO}, uninitialized);
        ops.maxout(Z.data(), this->param(1).value.data(), rows, nO, nP, best.data(), which);
        return best;
    }

    Floats2d predict_impl(Floats2dCView X) const { return tail_.predict(pieces(X, nullptr)); }

    std::pair<Floats2d, Backprop> forward_impl(Floats2dCView X, bool is_train) {
        Backprop bp;
        bp.layer = this;
        bp.X = Floats2d(X);
        bp.which = Array<std::int32_t, dyn, dyn>({X.shape(0), this->dim(0)}, uninitialized);
        Floats2d Y = tail_.forward(pieces(X, bp.which.data()), is_train, bp.tail);
        return {std::move(Y), std::move(bp)};
    }

    Init init_W_, init_b_;
    detail::NormDropout<NO> tail_;
};

}  // namespace tenon
