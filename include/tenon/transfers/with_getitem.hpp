// with_getitem<I, Tuple>(layer): Tuple -> Tuple with element I replaced by the layer's output
// (thinc/layers/with_getitem.py): the layer runs on std::get<I>(X), the other elements pass
// through (copied). Tuple is a std::pair or std::tuple of tenon data types whose element I is
// the layer's input type; I comes first, as Thinc's with_getitem(idx, layer). backprop
// applies the layer's backprop to element I of dY and passes the others through;
// initialize(X, Y) initialises the layer on element I of the samples.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>

#include "tenon/model/diagnostics.hpp"
#include "tenon/model/layer.hpp"
#include "tenon/model/widths.hpp"
#include "tenon/transfers/layer_argument.hpp"

namespace tenon {

namespace check {
template <std::size_t I>
struct element {};
template <std::size_t N>
struct tuple_size {};
template <class T>
struct tuple_type {};
// E045: I is not an element of Tuple (or Tuple is not a std::pair / std::tuple).
template <class Element, class Tuple, class Size>
struct with_getitem_index {
    static_assert(always_false<Element>,
                  "[tenon-E045] with_getitem<I, Tuple>(layer): I must be an element of Tuple, a std::pair or "
                  "std::tuple (element<I> of tuple_type<T> with tuple_size<N>: see the instantiation line)");
};
// E046: element I of Tuple is not the layer's input type.
template <class Element, class Expects, class Given>
struct with_getitem_type {
    static_assert(always_false<Element>,
                  "[tenon-E046] with_getitem<I, Tuple>(layer): element I of Tuple must be the layer's input type "
                  "(element<I>: the layer expects_type<T> but the tuple holds given_type<U>: see the instantiation line)");
};
}  // namespace check

namespace detail {
template <class T>
struct is_tuple_like : std::false_type {};
template <class A, class B>
struct is_tuple_like<std::pair<A, B>> : std::true_type {};
template <class... Ts>
struct is_tuple_like<std::tuple<Ts...>> : std::true_type {};

// Tuple with element I made U.
template <class Tuple, std::size_t I, class U>
struct replace_element;
template <class A, class B, class U>
struct replace_element<std::pair<A, B>, 0, U> {
    using type = std::pair<U, B>;
};
template <class A, class B, class U>
struct replace_element<std::pair<A, B>, 1, U> {
    using type = std::pair<A, U>;
};
template <class... Ts, std::size_t I, class U>
struct replace_element<std::tuple<Ts...>, I, U> {
    template <std::size_t... K>
    static auto make(std::index_sequence<K...>)
        -> std::tuple<std::conditional_t<K == I, U, std::tuple_element_t<K, std::tuple<Ts...>>>...>;
    using type = decltype(make(std::index_sequence_for<Ts...>{}));
};
}  // namespace detail

namespace check {
template <std::size_t I, class Tuple, class L>
constexpr auto with_getitem_check_of() {
    if constexpr (!detail::is_tuple_like<Tuple>::value) {
        return with_getitem_index<element<I>, tuple_type<name_t<Tuple>>, tuple_size<0>>{};
    } else if constexpr (I >= std::tuple_size_v<Tuple>) {
        return with_getitem_index<element<I>, tuple_type<name_t<Tuple>>, tuple_size<std::tuple_size_v<Tuple>>>{};
    } else if constexpr (!std::is_same_v<std::tuple_element_t<I, Tuple>, typename L::In>) {
        return with_getitem_type<element<I>, expects_type<name_t<typename L::In>>,
                                 given_type<name_t<std::tuple_element_t<I, Tuple>>>>{};
    } else {
        return ok{};
    }
}
}  // namespace check

template <std::size_t I, class Tuple, Model L>
class WithGetitem
    : public Layer<WithGetitem<I, Tuple, L>, Tuple, typename detail::replace_element<Tuple, I, typename L::Out>::type> {
    using Base =
        Layer<WithGetitem<I, Tuple, L>, Tuple, typename detail::replace_element<Tuple, I, typename L::Out>::type>;
    friend Base;
    static_assert(std::is_same_v<decltype(check::with_getitem_check_of<I, Tuple, L>()), check::ok>);

public:
    using typename Base::In;
    using typename Base::Out;

    explicit WithGetitem(L layer) : Base("with_getitem", {}, {}), layer_(std::move(layer)) {
        this->name_ = "with_getitem(" + layer_.name() + ")";
        this->set_fixed_attr("idx", static_cast<std::int64_t>(I));
        if (layer_.is_initialized()) this->mark_initialized();
    }

    L& layer() noexcept { return layer_; }
    const L& layer() const noexcept { return layer_; }
    void for_each_child(const std::function<void(Node&)>& f) override { f(layer_); }

    struct Backprop {
        typename L::Backprop bp;
        In operator()(const Out& dY) const {
            return pass<In>(dY, [&](const auto& d) { return bp(d); });
        }
    };

private:
    // A tuple of type R from t, element I made by f(get<I>(t)), the others copied.
    template <class R, class T, class F>
    static R pass(const T& t, F&& f) {
        return [&]<std::size_t... K>(std::index_sequence<K...>) {
            return R(pick<K>(t, f)...);
        }(std::make_index_sequence<std::tuple_size_v<T>>{});
    }
    template <std::size_t K, class T, class F>
    static auto pick(const T& t, F& f) {
        if constexpr (K == I) return f(std::get<K>(t));
        else return std::tuple_element_t<K, T>(std::get<K>(t));
    }

    template <class XP, class YP>
    void init_impl(XP X, YP Y) {
        using XI = std::remove_reference_t<typename L::InView>;
        using YI = std::remove_reference_t<typename L::OutView>;
        std::optional<XI> x;
        std::optional<YI> y;
        if constexpr (!std::is_null_pointer_v<XP>)
            if (X) x.emplace(std::get<I>(*X));
        if constexpr (!std::is_null_pointer_v<YP>)
            if (Y) y.emplace(std::get<I>(*Y));
        layer_.initialize_from(x ? &*x : nullptr, y ? &*y : nullptr);
        this->mark_initialized();
    }
    Out predict_impl(const In& X) const {
        return pass<Out>(X, [&](const auto& x) { return layer_.predict_inner(x); });
    }
    std::pair<Out, Backprop> forward_impl(const In& X, bool is_train) {
        Backprop bp;
        Out Y = pass<Out>(X, [&](const auto& x) {
            auto [y, b] = layer_.update_inner(x, is_train);
            bp.bp = std::move(b);
            return std::move(y);
        });
        return {std::move(Y), std::move(bp)};
    }

    L layer_;
};

// with_getitem<I, Tuple>(layer): the layer applied to element I of a Tuple input.
template <std::size_t I, class Tuple, class L>
auto with_getitem(L&& layer) {
    using D = std::remove_cvref_t<L>;
    if constexpr (is_failed_model<D>) {
        return failed_model{};  // its error is already said
    } else if constexpr (!Model<D>) {
        check::report<check::transfer_layer_argument<check::combinator<check::with_getitem_>,
                                                     check::not_a_model<check::name_t<D>>>>();
        return failed_model{};
    } else if constexpr (!std::is_same_v<decltype(check::with_getitem_check_of<I, Tuple, D>()), check::ok>) {
        check::report<decltype(check::with_getitem_check_of<I, Tuple, D>())>();  // E045, E046
        return failed_model{};
    } else {
        return WithGetitem<I, Tuple, D>(std::forward<L>(layer));
    }
}

}  // namespace tenon
