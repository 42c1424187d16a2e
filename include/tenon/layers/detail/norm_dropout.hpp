// The optional tail Thinc's Relu, Mish, Gelu, Swish, HardSwish and Maxout take:
// `normalize=True` appends a LayerNorm and `dropout=rate` a Dropout (in that order, as
// Thinc's chain(layer, LayerNorm, Dropout)).
// Here they are children of the layer, so the pass over the layer's output stays in one place.
// One class for every width (the LayerNorm's width is a run-time dim, static when the layer's
// is), compiled once in the library (src/norm_dropout.cpp), not in each file with a layer.
#pragma once
#include <functional>
#include <optional>

#include "tenon/layers/dropout.hpp"
#include "tenon/layers/layernorm.hpp"

namespace tenon::detail {

class NormDropout {
public:
    // width: the layer's static nO, or dyn.
    NormDropout(std::size_t width, bool normalize, std::optional<double> dropout);
    NormDropout(const NormDropout&);
    NormDropout(NormDropout&&) noexcept;
    NormDropout& operator=(const NormDropout&);
    NormDropout& operator=(NormDropout&&) noexcept;
    ~NormDropout();

    struct Backprop {
        LayerNorm<>::Backprop norm;
        Dropout::Backprop drop;
    };

    void initialize(std::size_t nO);
    bool initialized() const { return !norm_ || norm_->has_param("G"); }

    Floats2d predict(Floats2d Y) const;
    Floats2d forward(Floats2d Y, bool is_train, Backprop& bp);
    // dY of the tail's output -> dY of the layer's own output.
    Floats2d backward(Floats2dCView dY, const Backprop& bp) const;

    void for_each_child(const std::function<void(Node&)>& f);

    bool has_norm() const { return norm_.has_value(); }
    bool has_dropout() const { return drop_.has_value(); }

private:
    std::optional<LayerNorm<>> norm_;
    std::optional<Dropout> drop_;
};

}  // namespace tenon::detail
