// What the affine layers (Linear, Relu, Sigmoid, Mish, Softmax) share: dims nO and nI (static
// or dyn), parameters W (nO, nI) and b (nO), shape inference in initialize, the matrix
// products, and the optional LayerNorm/Dropout tail. A layer supplies its activation:
//   void activate(float* Y, const float* b, std::size_t rows, std::size_t n, float* Z) const;
//     adds b to each row of Y and applies the activation in one pass; writes the
//     pre-activation to Z when Z is not null (for layers whose keeps_preactivation is true)
//   void activate_backward(float* d, const float* Y, const float* Z, std::size_t rows, std::size_t n) const;
//     turns dY into the gradient of the pre-activation, in place
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

// Options of Relu and Mish: Linear's, plus Thinc's `dropout` and `normalize`.
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

    struct Backprop {
        Derived* layer = nullptr;
        Floats2d X;  // the input (for dW)
        Floats2d Y;  // the activation's output
        Floats2d Z;  // the pre-activation, for layers that need it
        typename NormDropout<NO>::Backprop tail;
        const char* refused = nullptr;  // set when the forward pass has no backward (see Softmax)
        Floats2d operator()(Floats2dCView dY) const {
            if (refused) throw Error(refused, "tenon-E117");
            const std::size_t rows = X.shape(0), nO = layer->dim(0);
            detail::check_same_shape(*layer, dY, rows, nO);  // before the tail, so the error names this layer
            Floats2d d = layer->tail_.backward(dY, tail);
            layer->activate_backward(d.data(), Y.data(), Z.data(), rows, nO);
            Floats2d dX({rows, X.shape(1)}, uninitialized);
            affine_backward(d.data(), X, layer->param(0).value.data(), nO, layer->grad_data(0),
                            layer->grad_data(1), dX.data());
            return dX;
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
        : Base(name, {{"nO", NO}, {"nI", NI}}, {{"W", {"nO", "nI"}}, {"b", {"nO"}}}),
          init_W_(std::move(init_W)),
          init_b_(init_b ? std::move(init_b) : Init(zero_init)),
          tail_(normalize, dropout) {
        if (nO != dyn) this->set_dim("nO", nO);
        if (nI != dyn) this->set_dim("nI", nI);
    }

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
        affine_only(X, Y.data());
        self().activate(Y.data(), this->param(1).value.data(), rows, nO, nullptr);
        return tail_.predict(std::move(Y));
    }

    std::pair<Floats2d, Backprop> forward_impl(Floats2dCView X, bool is_train) {
        detail::check_width(*this, X, this->dim(1));
        const std::size_t rows = X.shape(0), nO = this->dim(0);
        Backprop bp;
        bp.layer = &self();
        bp.X = Floats2d(X);
        bp.Y = Floats2d({rows, nO}, uninitialized);
        affine_only(X, bp.Y.data());
        if constexpr (Derived::keeps_preactivation) bp.Z = Floats2d({rows, nO}, uninitialized);
        self().activate(bp.Y.data(), this->param(1).value.data(), rows, nO,
                        Derived::keeps_preactivation ? bp.Z.data() : nullptr);
        Floats2d out = tail_.has_norm() || tail_.has_dropout() ? tail_.forward(bp.Y, is_train, bp.tail) : bp.Y;
        return {std::move(out), std::move(bp)};
    }

    // Y = X W^T (the bias is added by activate, in the same pass as the activation).
    void affine_only(Floats2dCView X, float* Y) const {
        cpu::sgemm(false, true, X.shape(0), this->dim(0), X.shape(1), 1.0f, X.data(), X.shape(1),
                   this->param(0).value.data(), X.shape(1), 0.0f, Y, this->dim(0));
    }

    // Adds b and applies f to every value, one pass; keeps the pre-activation in Z if given.
    template <class F>
    static void bias_map(float* Y, const float* b, std::size_t rows, std::size_t n, float* Z, F f) {
        for (std::size_t r = 0; r < rows; ++r) {
            float* y = Y + r * n;
            float* z = Z ? Z + r * n : nullptr;
            for (std::size_t i = 0; i < n; ++i) {
                const float v = y[i] + b[i];
                if (z) z[i] = v;
                y[i] = f(v);
            }
        }
    }

    const Derived& self() const noexcept { return static_cast<const Derived&>(*this); }
    Derived& self() noexcept { return static_cast<Derived&>(*this); }

    Init init_W_, init_b_;
    NormDropout<NO> tail_;
};

}  // namespace detail
}  // namespace tenon
