// The tail of the dense and maxout layers (layers/detail/norm_dropout.hpp).
#include "tenon/layers/detail/norm_dropout.hpp"

#include <utility>

namespace tenon::detail {

NormDropout::NormDropout(std::size_t width, bool normalize, std::optional<double> dropout) {
    if (normalize) {
        norm_.emplace(width);
        // As the layer's own width: static where the layer's type fixes it.
        if (width != dyn && width != 0) {
            Node& n = *norm_;
            n.fix_dim(0, width);
            n.fix_dim(1, width);
        }
    }
    if (dropout) drop_.emplace(*dropout);
}
NormDropout::NormDropout(const NormDropout&) = default;
NormDropout::NormDropout(NormDropout&&) noexcept = default;
NormDropout& NormDropout::operator=(const NormDropout&) = default;
NormDropout& NormDropout::operator=(NormDropout&&) noexcept = default;
NormDropout::~NormDropout() = default;

void NormDropout::initialize(std::size_t nO) {
    if (norm_) {
        norm_->set_dim("nI", nO);
        norm_->initialize();
    }
}

Floats2d NormDropout::predict(Floats2d Y) const { return norm_ ? norm_->predict(Y) : std::move(Y); }

Floats2d NormDropout::forward(Floats2d Y, bool is_train, Backprop& bp) {
    if (norm_) {
        auto [Yn, b] = (*norm_)(Y, is_train);
        Y = std::move(Yn);
        bp.norm = std::move(b);
    }
    if (drop_) drop_->apply_inplace(Y, is_train, bp.drop);
    return Y;
}

Floats2d NormDropout::backward(Floats2dCView dY, const Backprop& bp) const {
    Floats2d d = bp.drop(dY);
    return norm_ ? bp.norm(d) : d;
}

void NormDropout::for_each_child(const std::function<void(Node&)>& f) {
    if (norm_) f(*norm_);
    if (drop_) f(*drop_);
}

}  // namespace tenon::detail
