// noop(): the identity layer (for any data type; Floats2d by default).
#pragma once
#include <utility>

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
        T operator()(input_view_t<T> dY) const { return T(dY); }
    };

private:
    void init_impl(const input_view_t<T>*, const input_view_t<T>*) {}
    T predict_impl(input_view_t<T> X) const { return T(X); }
    std::pair<T, Backprop> forward_impl(input_view_t<T> X, bool) { return {T(X), Backprop{}}; }
};

template <class T = Floats2d>
Noop<T> noop() {
    return {};
}

}  // namespace tenon
