// What the affine layers (Linear, Relu, Sigmoid, Mish, Gelu, Swish, HardSwish, Softmax)
// share: dims nO and nI (static or dyn), parameters W (nO, nI) and b (nO), shape inference in initialize, the matrix
// products, and the optional LayerNorm/Dropout tail. A layer names its activation in its
// lowering declaration, `static constexpr lowering::DenseStage lowered_as{"relu",
// Activation::relu}` (a functor of backend/functors.hpp): the layer's own forward and the
// plan's row pass use the same functor, on the layer's backend (node.ops()). Softmax adds
// the softmax over each row (`softmax = true`), with its temperature (a node attribute).
// The passes (DenseCore) and the Backprop are not templates: compiled once, in the library
// (src/dense.cpp); a layer type adds only its constructors.
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

// What a dense layer's forward pass keeps for its backward pass. One type for every dense
// layer, compiled in the library (src/dense.cpp) like the passes below.
struct DenseBackprop {
    Node* layer = nullptr;
    const NormDropout* tail = nullptr;  // the layer's
    Activation act = Activation::identity;
    bool softmax = false;
    Floats2d X;  // the input (for dW)
    Floats2d Y;  // the activation's output
    Floats2d Z;  // the pre-activation, for layers that need it
    NormDropout::Backprop tail_bp;
    const char* refused = nullptr;  // set when the forward pass has no backward (see Softmax)

    DenseBackprop();
    DenseBackprop(const DenseBackprop&);
    DenseBackprop(DenseBackprop&&) noexcept;
    DenseBackprop& operator=(const DenseBackprop&);
    DenseBackprop& operator=(DenseBackprop&&) noexcept;
    ~DenseBackprop();

    Floats2d operator()(Floats2dCView dY) const;
    // The parameters' gradients alone, without the input's (a first layer's: the chain's
    // params_only, a run-time chain's first step).
    void params_only(Floats2dCView dY) const;

private:
    void run(Floats2dCView dY, float* dX) const;
};

// The passes of a dense layer: the same for every width and activation (the activation is a
// run-time value of the functors' switch), so compiled once, in the library.
struct DenseCore {
    // W (nO, nI) and b (nO), initialised; then the tail.
    static void init(Node& layer, const Init& init_W, const Init& init_b, NormDropout& tail, const Floats2dCView* X,
                     const Floats2dCView* Y);
    // Y = act(X W^T + b) (then the softmax over each row when `softmax_rows`); the
    // pre-activation into Z when Z is not null.
    static void activate(const Node& layer, Activation act, bool softmax_rows, Floats2dCView X, float* Y, float* Z);
    static Floats2d predict(const Node& layer, const NormDropout& tail, Activation act, bool softmax, Floats2dCView X);
    static std::pair<Floats2d, DenseBackprop> forward(Node& layer, NormDropout& tail, Activation act, bool softmax,
                                                      Floats2dCView X, bool is_train);
    // Adds to W's and b's gradients; dX when not null.
    static void backward(const DenseBackprop& bp, Floats2dCView dY, float* dX);
};
// tenon-E113 unless a Softmax's temperature is > 0.
void check_softmax_temperature(double t);
// 1 / the temperature of a Softmax (node attribute softmax_temperature), checked > 0.
float softmax_inv_temperature(const Node& layer);

template <class Derived, extent_t NO, extent_t NI>
class Dense : public Layer<Derived, Floats2d, Floats2d> {
    using Base = Layer<Derived, Floats2d, Floats2d>;
    friend Base;

public:
    // A static width of 0 fails with E012 in the layer; chains then see dyn (no second error).
    static constexpr extent_t static_nO = usable_width(NO), static_nI = usable_width(NI);
    // The activation (the layer's lowering declaration names it; a function, as Derived is
    // not complete where this base is).
    static constexpr Activation act() noexcept { return Derived::lowered_as.act; }

    using Backprop = DenseBackprop;

    void for_each_child(const std::function<void(Node&)>& f) override { tail_.for_each_child(f); }

protected:
    template <class, extent_t, extent_t>
    friend class Dense;

    // From the same layer with a dyn nI (chain's static width propagation): keeps the
    // options, dims and any parameters, and makes nI static.
    template <class Other, extent_t NI2>
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
          tail_(as_dim(static_nO), normalize, dropout) {}

    void init_impl(const Floats2dCView* X, const Floats2dCView* Y) {
        DenseCore::init(*this, init_W_, init_b_, tail_, X, Y);
    }
    Floats2d predict_impl(Floats2dCView X) const {
        return DenseCore::predict(*this, tail_, act(), Derived::lowered_as.softmax, X);
    }
    std::pair<Floats2d, Backprop> forward_impl(Floats2dCView X, bool is_train) {
        return DenseCore::forward(*this, tail_, act(), Derived::lowered_as.softmax, X, is_train);
    }

    Init init_W_, init_b_;
    NormDropout tail_;
};

}  // namespace detail
}  // namespace tenon
