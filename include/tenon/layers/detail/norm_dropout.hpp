// The optional tail Thinc's Relu, Mish, Gelu, Swish, HardSwish and Maxout take:
// `normalize=True` appends a LayerNorm and `dropout=rate` a Dropout (in that order, as
// Thinc's chain(layer, LayerNorm, Dropout)).
// Here they are children of the layer, so the pass over the layer's output stays in one place.
#pragma once
#include <optional>
#include <utility>

#include "tenon/layers/dropout.hpp"
#include "tenon/layers/layernorm.hpp"

namespace tenon::detail {

template <std::size_t N>
class NormDropout {
    // A layer with a static width of 0 fails with E012 itself, not in its LayerNorm.
    static constexpr std::size_t norm_width = N == 0 ? dyn : N;

public:
    NormDropout(bool normalize, std::optional<double> dropout) {
        if (normalize) norm_.emplace(N);
        if (dropout) drop_.emplace(*dropout);
    }

    struct Backprop {
        typename LayerNorm<norm_width>::Backprop norm;
        Dropout::Backprop drop;
    };

    void initialize(std::size_t nO) {
        if (norm_) {
            norm_->set_dim("nI", nO);
            norm_->initialize();
        }
    }
    bool initialized() const { return !norm_ || norm_->has_param("G"); }

    Floats2d predict(Floats2d Y) const { return norm_ ? norm_->predict(Y) : std::move(Y); }

    Floats2d forward(Floats2d Y, bool is_train, Backprop& bp) {
        if (norm_) {
            auto [Yn, b] = (*norm_)(Y, is_train);
            Y = std::move(Yn);
            bp.norm = std::move(b);
        }
        if (drop_) drop_->apply_inplace(Y, is_train, bp.drop);
        return Y;
    }

    // dY of the tail's output -> dY of the layer's own output.
    Floats2d backward(Floats2dCView dY, const Backprop& bp) const {
        Floats2d d = bp.drop(dY);
        return norm_ ? bp.norm(d) : d;
    }

    void for_each_child(const std::function<void(Node&)>& f) {
        if (norm_) f(*norm_);
        if (drop_) f(*drop_);
    }

    bool has_norm() const { return norm_.has_value(); }
    bool has_dropout() const { return drop_.has_value(); }

private:
    std::optional<LayerNorm<norm_width>> norm_;
    std::optional<Dropout> drop_;
};

}  // namespace tenon::detail
