// noop(): the identity layer (for any data type: noop<Ragged>(), noop<Padded>(),
// noop<List<Floats2d>>(); Floats2d by default). Its backprop passes dY through, after checking
// that dY is shaped like the output (tenon-E166).
#pragma once
#include <cstddef>
#include <utility>
#include <vector>

#include "tenon/combinators/detail/data_ops.hpp"
#include "tenon/model/layer.hpp"

namespace tenon {

template <class T = Floats2d>
class Noop : public Layer<Noop<T>, T, T> {
    using Base = Layer<Noop<T>, T, T>;
    friend Base;

public:
    static constexpr bool width_preserving = true;  // chain passes widths through it
    Noop() : Base("noop", {}, {}) { this->mark_initialized(); }

    struct Backprop {
        bool checked = false;             // false for a default Backprop (no forward ran)
        std::vector<std::size_t> layout;  // the output's, which dY must have
        T operator()(input_view_t<T> dY) const {
            if (checked && detail::layout_of(dY) != layout)
                throw ShapeError("noop: backprop: expected a gradient shaped like the output, " +
                                     detail::layout_vec_str(layout) + ", but found " + detail::layout_str(dY),
                                 "tenon-E166");
            return T(dY);
        }
    };

private:
    void init_impl(const std::remove_reference_t<input_view_t<T>>*, const std::remove_reference_t<input_view_t<T>>*) {}
    T predict_impl(input_view_t<T> X) const { return T(X); }
    std::pair<T, Backprop> forward_impl(input_view_t<T> X, bool) { return {T(X), Backprop{true, detail::layout_of(X)}}; }
};

template <class T = Floats2d>
Noop<T> noop() {
    return {};
}

}  // namespace tenon
