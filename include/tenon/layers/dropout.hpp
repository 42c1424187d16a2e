// Dropout: while training, zero each value with probability `rate` and scale the rest by
// 1 / (1 - rate); the identity in predict and when the rate is 0. The rate is the attribute
// "dropout_rate" (and "is_enabled" switches it off), as in thinc/layers/dropout.py.
#pragma once
#include <utility>
#include <variant>

#include "tenon/model/layer.hpp"
#include "tenon/random.hpp"

namespace tenon {

class Dropout : public Layer<Dropout, Floats2d, Floats2d> {
    using Base = Layer<Dropout, Floats2d, Floats2d>;
    friend Base;

public:
    explicit Dropout(double rate = 0.0) : Base("dropout", {}, {}) {
        if (!(rate >= 0.0 && rate <= 1.0))
            throw Error("dropout: the rate must be in [0, 1], found " + std::to_string(rate), "tenon-E112");
        set_attr("dropout_rate", rate);
        set_attr("is_enabled", true);
        mark_initialized();  // nothing to initialise
    }

    double rate() const { return std::get<double>(get_attr("dropout_rate")); }

    struct Backprop {
        Floats2d mask;  // empty when dropout was off for the call
        Floats2d operator()(Floats2dCView dY) const {
            Floats2d dX(dY);
            if (mask.size() == 0) return dX;
            if (dY.shape() != mask.shape())
                throw ShapeError("dropout: backprop: the gradient's shape differs from the output's", "tenon-E111");
            for (std::size_t i = 0, n = dX.size(); i < n; ++i) dX[i] *= mask[i];
            return dX;
        }
    };

    // Applies dropout in place to Y (rows, n), keeping the mask in bp; used by layers that
    // end in a dropout (Relu, Mish, Maxout) to avoid a copy.
    void apply_inplace(Floats2d& Y, bool is_train, Backprop& bp) const {
        const double r = rate();
        const bool on = is_train && r > 0.0 && std::get<bool>(get_attr("is_enabled"));
        if (!on) return;
        bp.mask = Floats2d(Y.shape(), uninitialized);
        if (r >= 1.0) {
            bp.mask.fill(0.0f);
        } else {
            const auto keep = static_cast<float>(1.0 / (1.0 - r));
            const auto threshold = static_cast<float>(r);
            Rng& rng = global_rng();
            for (float& m : bp.mask) m = rng.uniform() >= threshold ? keep : 0.0f;
        }
        for (std::size_t i = 0, n = Y.size(); i < n; ++i) Y[i] *= bp.mask[i];
    }

private:
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
