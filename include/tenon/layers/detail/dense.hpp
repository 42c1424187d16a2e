// What the affine layers (Linear, Relu, Sigmoid, Mish, Gelu, Swish, HardSwish, Softmax)
// share: dims nO and nI (static or dyn), parameters W (nO, nI) and b (nO), shape inference in initialize, the matrix
// products, and the optional LayerNorm/Dropout tail. A layer names its activation in its
// lowering declaration, `static constexpr lowering::DenseStage lowered_as{"relu",
// Activation::relu}` (a functor of backend/functors.hpp): the layer's own forward and the
// plan's row pass use the same functor, on the layer's backend (node.ops()). Softmax adds
// the softmax over each row (`softmax = true`) and supplies inv_temperature().
#pragma once
#include <optional>
#include <utility>

#include "tenon/init/init.hpp"
#include "tenon/layers/detail/affine.hpp"
#include "tenon/layers/detail/norm_dropout.hpp"
#include "tenon/lower/lowered_as.hpp"
#include "tenon/model/layer.hpp"

namespace tenon {

// Options of Linear and Sigmoid (Thinc's keyword arguments). Static widths in the type win;
// a width given here for a dyn template argument sets it at construction.
struct LinearOptions {
    std::size_t nO = dyn;
    std::size_t nI = dyn;
    Init init_W = {};  // empty: the layer's default (glorot_uniform_init)
    Init init_b = {};  // empty: zero_init
};

// Options of Relu, Mish, Gelu, Swish and HardSwish: Linear's, plus Thinc's `dropout` and `normalize`.
// (Each layer has a default constructor of its own, out of line, rather than a default
// argument `o = {}`: an options object holds two std::function, and one per layer in a
// 500-layer chain(Relu<64>(), ...) made GCC's points-to analysis of the caller, quadratic in
// the number of objects whose address escapes, take twice as long at -O2.)
struct DenseOptions {
    std::size_t nO = dyn;
    std::size_t nI = dyn;
    Init init_W = {};
    Init init_b = {};
    std::optional<double> dropout = {};
    bool normalize = false;
};

namespace detail {

template <class Derived, std::size_t NO, std::size_t NI>
class Dense : public Layer<Derived, Floats2d, Floats2d> {
    using Base = Layer<Derived, Floats2d, Floats2d>;
    friend Base;

public:
    // A static width of 0 fails with E012 in the layer; chains then see dyn (no second error).
    static constexpr std::size_t static_nO = NO == 0 ? dyn : NO, static_nI = NI == 0 ? dyn : NI;
    // The activation (the layer's lowering declaration names it; a function, as Derived is
    // not complete where this base is).
    static constexpr Activation act() noexcept { return Derived::lowered_as.act; }

    struct Backprop {
        Derived* layer = nullptr;
        Floats2d X;  // the input (for dW)
        Floats2d Y;  // the activation's output
        Floats2d Z;  // the pre-activation, for layers that need it
        typename NormDropout<NO>::Backprop tail;
        const char* refused = nullptr;  // set when the forward pass has no backward (see Softmax)
        Floats2d operator()(Floats2dCView dY) const {
            Floats2d dX({X.shape(0), X.shape(1)}, uninitialized);
            run(dY, dX.data());
            return dX;
        }
        // The parameters' gradients alone, without the input's (a first layer's: the chain's
        // params_only, a run-time chain's first step).
        void params_only(Floats2dCView dY) const { run(dY, nullptr); }

    private:
        void run(Floats2dCView dY, float* dX) const {
            if (refused) throw Error(refused, "tenon-E117");
            const std::size_t rows = X.shape(0), nO = layer->dim(0);
            detail::check_same_shape(*layer, dY, rows, nO);  // before the tail, so the error names this layer
            Floats2d d = layer->tail_.backward(dY, tail);
            const Ops& ops = layer->ops();
            ops.activation_backward(act(), d.data(), Y.data(), Z.data(), rows, nO);
            if constexpr (Derived::lowered_as.softmax)
                if (const float k = layer->inv_temperature(); k != 1.0f) ops.scale(d.data(), d.size(), k);
            affine_backward(ops, d.data(), X, layer->param(0).value.data(), nO, layer->grad_data(0),
                            layer->grad_data(1), dX);
        }
    };

    void for_each_child(const std::function<void(Node&)>& f) override { tail_.for_each_child(f); }

protected:
    template <class, std::size_t, std::size_t>
    friend class Dense;

    // From the same layer with a dyn nI (chain's static width propagation): keeps the
    // options, dims and any parameters, and makes nI static.
    template <class Other, std::size_t NI2>
    explicit Dense(Dense<Other, NO, NI2>&& o)
        : Base(static_cast<Node&&>(o)),
          init_W_(std::move(o.init_W_)),
          init_b_(std::move(o.init_b_)),
          tail_(std::move(o.tail_)) {
        this->fix_dim(1, NI);
    }

    Dense(const char* name, std::size_t nO, std::size_t nI, Init init_W, Init init_b, bool normalize,
          std::optional<double> dropout)
        : Base(Node::dense_node(name, NO, NI, nO, nI)),
          init_W_(std::move(init_W)),
          init_b_(init_b ? std::move(init_b) : Init(zero_init)),
          tail_(normalize, dropout) {}

    void init_impl(const Floats2dCView* X, const Floats2dCView* Y) {
        if (X) this->resolve_dim(1, X->shape(1));
        if (Y) this->resolve_dim(0, Y->shape(1));
        const std::size_t nO = this->require_dim(0), nI = this->require_dim(1);
        this->allocate_param(0, {nO, nI});
        this->allocate_param(1, {nO});
        init_W_(this->get_param("W"));
        init_b_(this->get_param("b"));
        tail_.initialize(nO);
        this->mark_initialized();
    }

    Floats2d predict_impl(Floats2dCView X) const {
        detail::check_width(*this, X, this->dim(1));
        const std::size_t rows = X.shape(0), nO = this->dim(0);
        Floats2d Y({rows, nO}, uninitialized);
        activate(X, Y.data(), nullptr, true);
        return tail_.predict(std::move(Y));
    }

    std::pair<Floats2d, Backprop> forward_impl(Floats2dCView X, bool is_train) {
        detail::check_width(*this, X, this->dim(1));
        const std::size_t rows = X.shape(0), nO = this->dim(0);
        Backprop bp;
        bp.layer = &self();
        bp.X = Floats2d(X);
        bp.Y = Floats2d({rows, nO}, uninitialized);
        if constexpr (fn::grad_reads_z(act())) bp.Z = Floats2d({rows, nO}, uninitialized);
        activate(X, bp.Y.data(), fn::grad_reads_z(act()) ? bp.Z.data() : nullptr, true);
        Floats2d out = tail_.has_norm() || tail_.has_dropout() ? tail_.forward(bp.Y, is_train, bp.tail) : bp.Y;
        return {std::move(out), std::move(bp)};
    }

    // Y = act(X W^T + b) (then the softmax over each row, for Softmax, when `normalize`);
    // the pre-activation into Z when Z is not null.
    void activate(Floats2dCView X, float* Y, float* Z, bool normalize) const {
        const Ops& ops = this->ops();
        const std::size_t rows = X.shape(0), nO = this->dim(0);
        affine_product(ops, X, this->param(0).value.data(), nO, Y);
        ops.bias_activate(act(), Y, this->param(1).value.data(), rows, nO, Z);
        if constexpr (Derived::lowered_as.softmax)
            if (normalize) ops.softmax_rows(Y, rows, nO, self().inv_temperature());
    }

    const Derived& self() const noexcept { return static_cast<const Derived&>(*this); }
    Derived& self() noexcept { return static_cast<Derived&>(*this); }

    Init init_W_, init_b_;
    NormDropout<NO> tail_;
};

}  // namespace detail
}  // namespace tenon
