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
    // (Dropout's own members are compiled once, in the library: src/dropout.cpp.)
    explicit Dropout(double rate = 0.0);

    // Checked on use too: the attribute may have been set after construction.
    double rate() const;

    struct Backprop {
        Floats2d mask;  // empty when dropout was off for the call
        const Ops* ops = nullptr;  // the layer's backend (where mask is), when it is not empty
        // The output's shape, checked against dY (dyn: a default Backprop, no forward ran).
        std::array<std::size_t, 2> shape{dyn, dyn};
        Floats2d operator()(Floats2dCView dY) const;
    };

    // Applies dropout in place to Y (rows, n), keeping the mask in bp; used by layers that
    // end in a dropout (Relu, Mish, Gelu, Swish, HardSwish, Maxout) to avoid a copy.
    void apply_inplace(Floats2d& Y, bool is_train, Backprop& bp) const;

private:
    static void check_rate(double rate);
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
