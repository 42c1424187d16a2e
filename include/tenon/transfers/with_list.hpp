// with_list<Kind>(layer): run a layer on lists of arrays (List<A> -> List<B>) over other
// sequence data, as Thinc's with_list; the output has the input's kind. Kind is the model's
// input type (A = the layer's array type, Floats2d for List<Floats2d>):
//   List<A>                  the layer itself
//   BasicRagged<A> (Ragged)  split into a list and concatenated again; the layer must keep
//                            the lengths
//   Padded (for 2d A)        converted to a list and back into the input's layout; the layer
//                            must keep the lengths
#pragma once
#include <optional>

#include "tenon/transfers/detail/transfer.hpp"

namespace tenon {

namespace detail::xfer {
enum class list_mode { none, direct, ragged, padded };

template <class LIn, class LOut, class Kind>
constexpr list_mode list_mode_of() {
    if constexpr (!is_list_v<LIn> || !is_list_v<LOut>) return list_mode::none;
    else if constexpr (std::is_same_v<Kind, LIn>) return list_mode::direct;
    else if constexpr (std::is_same_v<Kind, BasicRagged<element_t<LIn>>>) return list_mode::ragged;
    else if constexpr (is_tarray2d_v<element_t<LIn>> && is_tarray2d_v<element_t<LOut>> &&
                       std::is_same_v<Kind, BasicPadded<add_axis_t<element_t<LIn>>>>)
        return list_mode::padded;
    else return list_mode::none;
}
template <class LOut, list_mode M>
struct list_out {
    using type = void;
};
template <class LOut>
struct list_out<LOut, list_mode::direct> {
    using type = LOut;
};
template <class LOut>
struct list_out<LOut, list_mode::ragged> {
    using type = BasicRagged<element_t<LOut>>;
};
template <class LOut>
struct list_out<LOut, list_mode::padded> {
    using type = BasicPadded<add_axis_t<element_t<LOut>>>;
};

template <class L>
struct with_list_sig {
    using I = typename L::In;
    using O = typename L::Out;
    static constexpr bool layer_ok = is_list_v<I> && is_list_v<O>;
    using layer_check = check::with_list_layer<check::inner_input<check::name_t<I>>, check::inner_output<check::name_t<O>>>;
    template <class Kind>
    static constexpr bool kind_ok = list_mode_of<I, O, Kind>() != list_mode::none;
    static auto accepts_of() {
        if constexpr (!layer_ok) return check::accepts<>{};
        else if constexpr (is_tarray2d_v<element_t<I>>)
            return check::accepts<check::name_t<I>, check::name_t<BasicRagged<element_t<I>>>,
                                  check::name_t<BasicPadded<add_axis_t<element_t<I>>>>>{};
        else return check::accepts<check::name_t<I>, check::name_t<BasicRagged<element_t<I>>>>{};
    }
    using accepts = decltype(accepts_of());
};
template <>
struct wrapper_name<with_list_sig> {
    using type = check::with_list;
};
}  // namespace detail::xfer

template <class L, class Kind>
class WithList
    : public detail::xfer::Wrapper<
          WithList<L, Kind>, L, Kind,
          typename detail::xfer::list_out<typename L::Out,
                                          detail::xfer::list_mode_of<typename L::In, typename L::Out, Kind>()>::type> {
    using LI = typename L::In;
    using LO = typename L::Out;
    using A = detail::xfer::element_t<LI>;
    using B = detail::xfer::element_t<LO>;
    static constexpr detail::xfer::list_mode mode = detail::xfer::list_mode_of<LI, LO, Kind>();
    static_assert(mode != detail::xfer::list_mode::none, "with_list: use the creation function with_list<Kind>(layer)");
    using OutT = typename detail::xfer::list_out<LO, mode>::type;
    using Base = detail::xfer::Wrapper<WithList, L, Kind, OutT>;
    using LayerBase = Layer<WithList, Kind, OutT>;
    friend LayerBase;
    friend Base;
    using M = detail::xfer::list_mode;

public:
    using typename LayerBase::In;
    using typename LayerBase::InView;
    using typename LayerBase::Out;
    using typename LayerBase::OutView;

    template <class L2>
        requires(!std::is_same_v<L2, L>)
    explicit WithList(WithList<L2, Kind>&& o) : Base(std::move(o)) {}

    explicit WithList(L layer) : Base("with_list", std::move(layer)) {
        detail::xfer::take_child_dims(*this, this->layer_);  // the layer's widths (options), for the models around this one
    }

    // lower(): the layer's stages on the sequences' rows (a list and a ragged array are the
    // same rows in the plan; a Padded is too, without its padding).
    static constexpr lowering::OnRows lowered_as{};
    static constexpr bool plan_rows = mode == detail::xfer::list_mode::direct ||
                                      mode == detail::xfer::list_mode::ragged ||
                                      mode == detail::xfer::list_mode::padded;
    static constexpr lowering::PaddedRows plan_padded =
        mode == detail::xfer::list_mode::padded ? lowering::PaddedRows::rows : lowering::PaddedRows::none;
    static constexpr bool plan_pads = false;

    struct Backprop {
        typename L::Backprop inner;
        const WithList* model = nullptr;
        Ints1d lengths;                     // ragged: the sequences' lengths
        detail::xfer::PaddedLayout layout;  // padded: the input's (and output's) layout
        typename A::shape_type x_shape{};   // the input rows' shape (an empty batch's width)
        In operator()(OutView dY) const {
            const std::string& who = model->name();
            if constexpr (mode == M::direct) {
                return inner(dY);
            } else if constexpr (mode == M::ragged) {
                detail::xfer::check_lengths(who, lengths, dY.lengths());
                return detail::xfer::ragged_of(inner(to_list(dY)), who.c_str(), x_shape);
            } else {
                layout.check(who, dY);
                return layout.pad(who, inner(to_list(dY)), x_shape);
            }
        }
    };

private:
    void init_impl(detail::xfer::sample_ptr<In> X, detail::xfer::sample_ptr<Out> Y) {
        // Without a sample Y, a width given to this model as nO (by the model around it) reaches
        // the layer, as Y would.
        if (!Y) widths::offer(this->layer(), "nO", widths::known(*this, "nO"));
        if constexpr (mode == M::direct) {
            this->init_child(X, Y);
        } else {
            std::optional<LI> x;
            std::optional<LO> y;
            if (X) x = to_list(*X);
            if (Y) y = to_list(*Y);
            this->init_child(x ? &*x : nullptr, y ? &*y : nullptr);
        }
    }

    template <class Self>
    static Out apply(Self& self, InView X, bool is_train, Backprop* bp) {
        const std::string& who = self.name();
        if constexpr (mode == M::direct) {
            return Base::call(self, X, is_train, bp);
        } else if constexpr (mode == M::ragged) {
            const LO Ys = Base::call(self, to_list(X), is_train, bp);
            detail::xfer::check_kept_lengths(who, X.lengths(), detail::xfer::lengths_of(Ys));
            if (bp) {
                bp->lengths = X.lengths();
                bp->x_shape = detail::xfer::zero_rows(X.data().shape());
            }
            typename B::shape_type y_shape{};
            return detail::xfer::ragged_of(Ys, who.c_str(), y_shape);
        } else {
            const auto layout = detail::xfer::PaddedLayout::of(X);
            const LI Xs = to_list(X);
            const LO Ys = Base::call(self, Xs, is_train, bp);
            detail::xfer::check_kept_lengths(who, detail::xfer::lengths_of(Xs), detail::xfer::lengths_of(Ys));
            if (bp) {
                bp->layout = layout;
                for (std::size_t d = 1; d < A::rank; ++d) bp->x_shape[d] = X.data().shape(d + 1);
            }
            return layout.pad(who, Ys, typename B::shape_type{});
        }
    }
};

template <class Kind = detail::xfer::no_kind, class L>
auto with_list(L&& layer) {
    using D = std::remove_cvref_t<L>;
    if constexpr (!detail::xfer::wrapper_ok<detail::xfer::with_list_sig, D, Kind>())
        return detail::xfer::wrapper_failure<detail::xfer::with_list_sig, D, Kind>();
    else return WithList<D, Kind>(D(std::forward<L>(layer)));
}

}  // namespace tenon
