// noop(): the identity layer (for any data type: noop<Ragged>(), noop<Padded>(),
// noop<List<Floats2d>>(); Floats2d by default). Its backprop passes dY through, after checking
// that dY is shaped like the output (tenon-E166).
#pragma once
#include <array>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "tenon/combinators/detail/data_ops.hpp"
#include "tenon/lower/lowered_as.hpp"
#include "tenon/model/layer.hpp"

namespace tenon {

namespace detail {
// The output layout a noop's backprop checks dY against: an array's shape (no allocation on
// the training path), the whole layout (lengths, items) for sequence data.
template <class T>
struct noop_layout {
    using type = Layout;
    static type of(input_view_t<T> x) { return layout_of(x); }
    static std::string str(const type& l) { return layout_vec_str(l); }
};
template <class E, extent_t... Ext>
struct noop_layout<Array<E, Ext...>> {
    using type = std::array<std::size_t, sizeof...(Ext)>;
    static type of(input_view_t<Array<E, Ext...>> x) { return x.shape(); }
    static std::string str(const type& s) { return shape_str(s); }
};
}  // namespace detail

template <class T = Floats2d>
class Noop : public Layer<Noop<T>, T, T> {
    using Base = Layer<Noop<T>, T, T>;
    friend Base;
    using Layout = detail::noop_layout<T>;

public:
    static constexpr bool width_preserving = true;  // chain passes widths through it
    Noop() : Base("noop", {}, {}) { this->mark_initialized(); }
    static constexpr lowering::SameRows lowered_as{};  // lower(): the same rows, no stage

    struct Backprop {
        bool checked = false;           // false for a default Backprop (no forward ran)
        typename Layout::type layout{};  // the output's, which dY must have
        T operator()(input_view_t<T> dY) const {
            if (checked && Layout::of(dY) != layout)
                throw ShapeError("noop: backprop: expected a gradient shaped like the output, " + Layout::str(layout) +
                                     ", but found " + detail::layout_str(dY),
                                 "tenon-E166");
            return T(dY);
        }
    };

private:
    void init_impl(sample_ptr_t<input_view_t<T>>, sample_ptr_t<input_view_t<T>>) {}
    T predict_impl(input_view_t<T> X) const { return T(X); }
    std::pair<T, Backprop> forward_impl(input_view_t<T> X, bool) { return {T(X), Backprop{true, Layout::of(X)}}; }
};

template <class T = Floats2d>
Noop<T> noop() {
    return {};
}

}  // namespace tenon
