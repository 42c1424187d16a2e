// sigmoid_activation(): the elementwise sigmoid with no weights (input clipped to [-20, 20]),
// after thinc/layers/sigmoid_activation.py. Any width; nO == nI.
#pragma once
#include <utility>

#include "tenon/layers/sigmoid.hpp"
#include "tenon/lower/lowered_as.hpp"

namespace tenon {

class SigmoidActivation : public Layer<SigmoidActivation, Floats2d, Floats2d> {
    using Base = Layer<SigmoidActivation, Floats2d, Floats2d>;
    friend Base;

public:
    static constexpr bool width_preserving = true;  // chain passes widths through it
    // lower(): one operation of the row pass before it (lower/lowered_as.hpp).
    static constexpr lowering::RowOpStage lowered_as{lowering::OpKind::sigmoid};
    SigmoidActivation() : Base("sigmoid_activation", {}, {}) { mark_initialized(); }

    struct Backprop {
        Floats2d Y;
        const Ops* ops = nullptr;
        Floats2d operator()(Floats2dCView dY) const {
            if (dY.shape() != Y.shape())
                throw ShapeError("sigmoid_activation: backprop: expected a gradient of shape (" +
                                     std::to_string(Y.shape(0)) + ", " + std::to_string(Y.shape(1)) +
                                     ") like the output, but found (" + std::to_string(dY.shape(0)) + ", " +
                                     std::to_string(dY.shape(1)) + ")",
                                 "tenon-E111");
            Floats2d dX(dY);
            ops->activation_backward(Activation::sigmoid, dX.data(), Y.data(), nullptr, 1, dX.size());
            return dX;
        }
    };

private:
    void init_impl(const Floats2dCView*, const Floats2dCView*) {}
    Floats2d predict_impl(Floats2dCView X) const {
        Floats2d Y(X.shape(), uninitialized);
        this->ops().activate(Activation::sigmoid, X.data(), Y.data(), X.size());
        return Y;
    }
    std::pair<Floats2d, Backprop> forward_impl(Floats2dCView X, bool) {
        Floats2d Y = predict_impl(X);
        Backprop bp{Y, &this->ops()};
        return {std::move(Y), std::move(bp)};
    }
};

inline SigmoidActivation sigmoid_activation() { return {}; }

}  // namespace tenon
