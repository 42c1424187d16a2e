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

namespace detail {
// What Maxout's forward pass keeps for its backward pass; with the passes (MaxoutCore), one
// type for every width, compiled once in the library (src/maxout.cpp).
struct MaxoutBackprop {
    Node* layer = nullptr;
    const NormDropout* tail = nullptr;  // the layer's
    Floats2d X;
    Array<std::int32_t, dyn, dyn> which;  // the winning piece per output
    NormDropout::Backprop tail_bp;

    MaxoutBackprop();
    MaxoutBackprop(const MaxoutBackprop&);
    MaxoutBackprop(MaxoutBackprop&&) noexcept;
    MaxoutBackprop& operator=(const MaxoutBackprop&);
    MaxoutBackprop& operator=(MaxoutBackprop&&) noexcept;
    ~MaxoutBackprop();

    Floats2d operator()(Floats2dCView dY) const;
};
struct MaxoutCore {
    static void init(Node& layer, const Init& init_W, const Init& init_b, NormDropout& tail, const Floats2dCView* X,
                     const Floats2dCView* Y);
    static Floats2d predict(const Node& layer, const NormDropout& tail, Floats2dCView X);
    static std::pair<Floats2d, MaxoutBackprop> forward(Node& layer, NormDropout& tail, Floats2dCView X, bool is_train);
    static Floats2d backward(const MaxoutBackprop& bp, Floats2dCView dY);

private:
    static Floats2d pieces(const Node& layer, Floats2dCView X, std::int32_t* which);
};
}  // namespace detail

template <extent_t NO = dyn, extent_t NI = dyn, extent_t NP = dyn>
class Maxout : public Layer<Maxout<NO, NI, NP>, Floats2d, Floats2d> {
    using Base = Layer<Maxout<NO, NI, NP>, Floats2d, Floats2d>;
    friend Base;
    // E012: a static width of 0.
    static_assert(sizeof(check::width_check<NO, Maxout, check::nO>) + sizeof(check::width_check<NI, Maxout, check::nI>) +
                      sizeof(check::width_check<NP, Maxout, check::nP>) >
                  0);

public:
    // A static width of 0 fails with E012; chains then see dyn (no second error).
    static constexpr extent_t static_nO = usable_width(NO), static_nI = usable_width(NI), static_nP = NP;
    // lower(): the product, the largest piece per output, then the tail (lower/lowered_as.hpp).
    static constexpr lowering::MaxoutStage lowered_as{"maxout"};

    // Thinc's positional widths (Maxout(64, 32), Maxout(64, 32, 3)): tenon-E056, the one error
    // (the layer is made without them, so that the rest of the program adds none).
    explicit Maxout(check::thinc_width, check::thinc_width = check::thinc_width(0),
                    check::thinc_width = check::thinc_width(0))
        : Maxout() {
        static_assert(sizeof(check::widths_as_arguments<Maxout>) > 0);
    }
    // Without options: out of line (see DenseOptions), so that a caller's long chain of
    // Maxout() makes no options object per layer.
    [[gnu::noinline]] explicit Maxout() : Maxout(MaxoutOptions{}) {}
    explicit Maxout(MaxoutOptions o)
        : Base(Node::maxout_node(NO, NI, NP, o.nO, o.nI, o.nP)),
          init_W_(o.init_W ? o.init_W : Init(glorot_uniform_init)),
          init_b_(o.init_b ? o.init_b : Init(zero_init)),
          tail_(as_dim(static_nO), o.normalize, o.dropout) {}

    // The same layer with a static nI (chain's width propagation rebinds a dyn nI).
    template <extent_t N2>
        requires(valid_width(NO) && valid_width(NP))  // not for a layer that fails E012
    using with_nI = Maxout<NO, N2, NP>;
    template <extent_t N2>
        requires(NI != N2)
    explicit Maxout(Maxout<NO, N2, NP>&& o)
        : Base(static_cast<Node&&>(o)),
          init_W_(std::move(o.init_W_)),
          init_b_(std::move(o.init_b_)),
          tail_(std::move(o.tail_)) {
        this->fix_dim(1, NI);
    }

    using Backprop = detail::MaxoutBackprop;

    void for_each_child(const std::function<void(Node&)>& f) override { tail_.for_each_child(f); }

private:
    template <extent_t, extent_t, extent_t>
    friend class Maxout;

    void init_impl(const Floats2dCView* X, const Floats2dCView* Y) {
        detail::MaxoutCore::init(*this, init_W_, init_b_, tail_, X, Y);
    }
    Floats2d predict_impl(Floats2dCView X) const { return detail::MaxoutCore::predict(*this, tail_, X); }
    std::pair<Floats2d, Backprop> forward_impl(Floats2dCView X, bool is_train) {
        return detail::MaxoutCore::forward(*this, tail_, X, is_train);
    }

    Init init_W_, init_b_;
    detail::NormDropout tail_;
};

}  // namespace tenon
