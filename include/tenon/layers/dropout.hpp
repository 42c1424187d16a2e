// Dropout: while training, zero each value with probability `rate` and scale the rest by
// 1 / (1 - rate); the identity in predict and when the rate is 0. The rate is the attribute
// "dropout_rate" (and "is_enabled" switches it off), as in thinc/layers/dropout.py.
#pragma once
#include <array>
#include <string>
#include <utility>
#include <variant>

#include "tenon/lower/lowered_as.hpp"
#include "tenon/model/layer.hpp"
#include "tenon/random.hpp"

namespace tenon {

class Dropout : public Layer<Dropout, Floats2d, Floats2d> {
    using Base = Layer<Dropout, Floats2d, Floats2d>;
    friend Base;

public:
    static constexpr bool width_preserving = true;  // chain passes widths through it
    // lower(): one operation of the row pass before it (lower/lowered_as.hpp).
    static constexpr lowering::RowOpStage lowered_as{lowering::OpKind::dropout};
    explicit Dropout(double rate = 0.0) : Base("dropout", {}, {}) {
        check_rate(rate);
        set_attr("dropout_rate", rate);
        set_attr("is_enabled", true);
        mark_initialized();  // nothing to initialise
    }

    // Checked on use too: the attribute may have been set after construction.
    double rate() const {
        const double r = attr_as<double>("dropout_rate");
        check_rate(r);
        return r;
    }

    struct Backprop {
        Floats2d mask;  // empty when dropout was off for the call
        // The output's shape, checked against dY (dyn: a default Backprop, no forward ran).
        std::array<std::size_t, 2> shape{dyn, dyn};
        Floats2d operator()(Floats2dCView dY) const {
            if (shape[0] != dyn && dY.shape() != shape)
                throw ShapeError("dropout: backprop: expected a gradient of shape (" + std::to_string(shape[0]) +
                                     ", " + std::to_string(shape[1]) + ") like the output, but found (" +
                                     std::to_string(dY.shape(0)) + ", " + std::to_string(dY.shape(1)) + ")",
                                 "tenon-E111");
            Floats2d dX(dY);
            if (mask.size() == 0) return dX;
            for (std::size_t i = 0, n = dX.size(); i < n; ++i) dX[i] *= mask[i];
            return dX;
        }
    };

    // Applies dropout in place to Y (rows, n), keeping the mask in bp; used by layers that
    // end in a dropout (Relu, Mish, Maxout) to avoid a copy.
    void apply_inplace(Floats2d& Y, bool is_train, Backprop& bp) const {
        bp.shape = Y.shape();
        const double r = rate();
        const bool on = is_train && r > 0.0 && attr_as<bool>("is_enabled");
        if (!on) return;
        bp.mask = Floats2d(Y.shape(), uninitialized);
        if (r >= 1.0) {
            bp.mask.fill(0.0f);
        } else {
            dropout_mask(dropout_key(global_rng()), 0, bp.mask.data(), bp.mask.size(), r,
                         static_cast<float>(1.0 / (1.0 - r)));
        }
        for (std::size_t i = 0, n = Y.size(); i < n; ++i) Y[i] *= bp.mask[i];
    }

private:
    static void check_rate(double rate) {
        if (!(rate >= 0.0 && rate <= 1.0))
            throw Error("dropout: the rate must be in [0, 1], found " + std::to_string(rate), "tenon-E112");
    }
    void init_impl(const Floats2dCView*, const Floats2dCView*) {}
    Floats2d predict_impl(Floats2dCView X) const { return Floats2d(X); }
    std::pair<Floats2d, Backprop> forward_impl(Floats2dCView X, bool is_train) {
        Floats2d Y(X);
        Backprop bp;
        apply_inplace(Y, is_train, bp);
        return {std::move(Y), std::move(bp)};
    }
};

}  // namespace tenon
