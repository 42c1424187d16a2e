// What the reductions over Ragged (reduce_first, reduce_last, reduce_max, reduce_mean,
// reduce_sum) share: Ragged -> Floats2d with one row per sequence, no dims and no
// parameters (the width passes through, so chain's width propagation sees through them),
// and a backprop that returns a Ragged with the input's lengths. A reduction names its kind
// (`static constexpr Reduce kind`: the math is fn::segment_reduce_one, backend/functors.hpp,
// run by the layer's backend as Ops::segment_reduce) and says `needs_which` (reduce_max keeps
// the argmax of each column) and `nonempty` (the sequences must have at least one row:
// tenon-E190 names the first that has none).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "tenon/lower/lowered_as.hpp"
#include "tenon/model/layer.hpp"
#include "tenon/types/ragged.hpp"

namespace tenon::detail {

template <class Derived>
class Reduction : public Layer<Derived, Ragged, Floats2d> {
    using Base = Layer<Derived, Ragged, Floats2d>;
    friend Base;

public:
    // No dims: the output width is the input width.
    static constexpr bool width_preserving = true;
    // A plan runs it as a reduce stage (lower.hpp reads Derived::kind, nonempty, why_nonempty).
    static constexpr lowering::ReduceStage lowered_as{};

    struct Backprop {
        const char* name = nullptr;
        const Ops* ops = nullptr;
        Ints1d lengths;
        Ints2d which;  // reduce_max: the row (within its sequence) of each column's maximum
        std::size_t width = dyn;  // dyn: a default Backprop (no forward ran)
        Ragged operator()(Floats2dCView dY) const {
            const std::size_t B = lengths.size();
            if (width == dyn || dY.shape(0) != B || dY.shape(1) != width)
                throw ShapeError(std::string(name ? name : "reduce") + ": backprop: expected a gradient of shape (" +
                                     std::to_string(B) + ", " + dim_str(width) +
                                     "), one row per sequence like the output, but found (" +
                                     std::to_string(dY.shape(0)) + ", " + std::to_string(dY.shape(1)) + ")",
                                 "tenon-E191");
            std::size_t rows = 0;
            for (std::size_t i = 0; i < B; ++i) rows += static_cast<std::size_t>(lengths[i]);
            Floats2d dX({rows, width});
            ops->segment_reduce_backward(Derived::kind, dY.data(), lengths.data(), B, width,
                                         Derived::needs_which ? which.data() : nullptr, dX.data());
            return Ragged(std::move(dX), lengths);
        }
    };

protected:
    explicit Reduction(const char* name) : Base(name, {}, {}) { this->mark_initialized(); }

    void init_impl(sample_ptr_t<typename Base::InView>, sample_ptr_t<typename Base::OutView>) {}

    Floats2d run(const Ragged& X, Ints2d* which) const {
        const std::size_t B = X.size(), n = X.data().shape(1);
        if constexpr (Derived::nonempty)
            detail::check_nonempty_sequences(this->name(), X.lengths().data(), B, Derived::why_nonempty);
        Floats2d Y({B, n});
        if (which) *which = Ints2d({B, n}, this->ops().memory());  // written by the backend's pass
        if (B)
            this->ops().segment_reduce(Derived::kind, X.data().data(), X.lengths().data(), B, n, Y.data(),
                                       which ? which->data() : nullptr);
        return Y;
    }
    Floats2d predict_impl(const Ragged& X) const {
        Ints2d which;
        return run(X, Derived::needs_which ? &which : nullptr);
    }
    std::pair<Floats2d, Backprop> forward_impl(const Ragged& X, bool) {
        Backprop bp;
        Floats2d Y = run(X, Derived::needs_which ? &bp.which : nullptr);
        bp.name = Derived::layer_name;
        bp.ops = &this->ops();
        bp.lengths = X.lengths();
        bp.width = X.data().shape(1);
        return {std::move(Y), std::move(bp)};
    }
};

}  // namespace tenon::detail
