// with_ragged<Kind>(layer): run a layer on Ragged (Ragged -> Ragged) over other sequence data,
// as Thinc's with_ragged; the output has the input's kind. Kind is the model's input type
// (A = the layer's Ragged data type, Floats2d for Ragged):
//   BasicRagged<A> (Ragged)  the layer itself
//   List<A> (List<Floats2d>) concatenated and split again (at the output's lengths)
//   Padded (for 2d A)        converted to Ragged and back into the input's layout; the layer
//                            must keep the lengths
// (Thinc's 2-tuple form (data, lengths) is the Ragged type here.)
#pragma once
#include <optional>

#include "tenon/transfers/detail/transfer.hpp"

namespace tenon {

namespace detail::xfer {
enum class ragged_mode { none, direct, list, padded };

template <class LIn, class LOut, class Kind>
constexpr ragged_mode ragged_mode_of() {
    if constexpr (!is_ragged_v<LIn> || !is_ragged_v<LOut>) return ragged_mode::none;
    else if constexpr (std::is_same_v<Kind, LIn>) return ragged_mode::direct;
    else if constexpr (std::is_same_v<Kind, List<element_t<LIn>>>) return ragged_mode::list;
    else if constexpr (LIn::rank == 2 && LOut::rank == 2 && std::is_same_v<Kind, BasicPadded<add_axis_t<element_t<LIn>>>>)
        return ragged_mode::padded;
    else return ragged_mode::none;
}
template <class LOut, ragged_mode M>
struct ragged_out {
    using type = void;
};
template <class LOut>
struct ragged_out<LOut, ragged_mode::direct> {
    using type = LOut;
};
template <class LOut>
struct ragged_out<LOut, ragged_mode::list> {
    using type = List<element_t<LOut>>;
};
template <class LOut>
struct ragged_out<LOut, ragged_mode::padded> {
    using type = BasicPadded<add_axis_t<element_t<LOut>>>;
};

template <class L>
struct with_ragged_sig {
    using I = typename L::In;
    using O = typename L::Out;
    static constexpr bool layer_ok = is_ragged_v<I> && is_ragged_v<O>;
    using layer_check = check::with_ragged_layer<check::inner_input<check::name_t<I>>, check::inner_output<check::name_t<O>>>;
    template <class Kind>
    static constexpr bool kind_ok = ragged_mode_of<I, O, Kind>() != ragged_mode::none;
    static auto accepts_of() {
        if constexpr (!layer_ok) return check::accepts<>{};
        else if constexpr (I::rank == 2)
            return check::accepts<check::name_t<I>, check::List<check::name_t<element_t<I>>>,
                                  check::name_t<BasicPadded<add_axis_t<element_t<I>>>>>{};
        else return check::accepts<check::name_t<I>, check::List<check::name_t<element_t<I>>>>{};
    }
    using accepts = decltype(accepts_of());
};
template <>
struct wrapper_name<with_ragged_sig> {
    using type = check::with_ragged;
};
}  // namespace detail::xfer

template <class L, class Kind>
class WithRagged
    : public detail::xfer::Wrapper<
          WithRagged<L, Kind>, L, Kind,
          typename detail::xfer::ragged_out<typename L::Out,
                                            detail::xfer::ragged_mode_of<typename L::In, typename L::Out, Kind>()>::type> {
    using LI = typename L::In;
    using LO = typename L::Out;
    using A = detail::xfer::element_t<LI>;
    using B = detail::xfer::element_t<LO>;
    static constexpr detail::xfer::ragged_mode mode = detail::xfer::ragged_mode_of<LI, LO, Kind>();
    static_assert(mode != detail::xfer::ragged_mode::none, "with_ragged: use the creation function with_ragged<Kind>(layer)");
    using OutT = typename detail::xfer::ragged_out<LO, mode>::type;
    using Base = detail::xfer::Wrapper<WithRagged, L, Kind, OutT>;
    using LayerBase = Layer<WithRagged, Kind, OutT>;
    friend LayerBase;
    friend Base;
    using M = detail::xfer::ragged_mode;

public:
    using typename LayerBase::In;
    using typename LayerBase::InView;
    using typename LayerBase::Out;
    using typename LayerBase::OutView;

    template <class L2>
        requires(!std::is_same_v<L2, L>)
    explicit WithRagged(WithRagged<L2, Kind>&& o) : Base(std::move(o)) {}

    explicit WithRagged(L layer) : Base("with_ragged", std::move(layer)) {
        detail::xfer::take_child_dims(*this, this->layer_);  // the layer's widths (options), for the models around this one
    }

    // lower(): the layer's stages on the sequences' rows (a Padded's without its padding).
    static constexpr lowering::OnRows lowered_as{};
    static constexpr bool plan_rows = mode == detail::xfer::ragged_mode::direct ||
                                      mode == detail::xfer::ragged_mode::list ||
                                      mode == detail::xfer::ragged_mode::padded;
    static constexpr lowering::PaddedRows plan_padded =
        mode == detail::xfer::ragged_mode::padded ? lowering::PaddedRows::rows : lowering::PaddedRows::none;
    static constexpr bool plan_pads = false;

    struct Backprop {
        typename L::Backprop inner;
        const WithRagged* model = nullptr;
        Ints1d lengths;                     // list: the output's lengths
        typename B::shape_type y_shape{};   // list: the output data's shape (an empty batch's width)
        detail::xfer::PaddedLayout layout;  // padded: the input's (and output's) layout
        typename A::shape_type x_shape{};   // padded: the input rows' shape
        In operator()(OutView dY) const {
            const std::string& who = model->name();
            if constexpr (mode == M::direct) {
                return inner(dY);
            } else if constexpr (mode == M::list) {
                detail::xfer::check_list_lengths(who, lengths, dY);
                if (dY.empty()) return In{};
                return to_list(inner(detail::xfer::ragged_of(dY, who.c_str(), y_shape)));
            } else {
                layout.check(who, dY);
                return layout.pad(who, to_list(inner(to_ragged(dY))), x_shape);
            }
        }
    };

private:
    void init_impl(detail::xfer::sample_ptr<In> X, detail::xfer::sample_ptr<Out> Y) {
        std::optional<LI> x;
        std::optional<LO> y;
        if constexpr (mode == M::list) {
            if (Y && Y->empty()) Y = nullptr;  // (as below: an empty list says nothing)
        }
        // Without a sample Y, a width given to this model as nO (by the model around it) reaches
        // the layer, as Y would.
        if (!Y) widths::offer(this->layer(), "nO", widths::known(*this, "nO"));
        if constexpr (mode == M::direct) {
            this->init_child(X, Y);
            return;
        } else {
            if constexpr (mode == M::list) {
                if (X && X->empty()) X = nullptr;
                if (Y && Y->empty()) Y = nullptr;
            }
            if (X) x = to_ragged(*X);
            if (Y) y = to_ragged(*Y);
            this->init_child(x ? &*x : nullptr, y ? &*y : nullptr);
        }
    }

    template <class Self>
    static Out apply(Self& self, InView X, bool is_train, Backprop* bp) {
        const std::string& who = self.name();
        if constexpr (mode == M::direct) {
            return Base::call(self, X, is_train, bp);
        } else if constexpr (mode == M::list) {
            if (X.empty()) {  // an empty batch: nothing to run the layer on
                if (bp) bp->lengths = Ints1d({0});
                return Out{};
            }
            const LO Yr = Base::call(self, to_ragged(X), is_train, bp);
            if (bp) {
                bp->lengths = Yr.lengths();
                bp->y_shape = detail::xfer::zero_rows(Yr.data().shape());
            }
            return to_list(Yr);
        } else {
            const auto layout = detail::xfer::PaddedLayout::of(X);
            const LI Xr = to_ragged(X);
            const LO Yr = Base::call(self, Xr, is_train, bp);
            detail::xfer::check_kept_lengths(who, Xr.lengths(), Yr.lengths());
            if (bp) {
                bp->layout = layout;
                bp->x_shape = detail::xfer::zero_rows(Xr.data().shape());
            }
            return layout.pad(who, to_list(Yr), detail::xfer::zero_rows(Yr.data().shape()));
        }
    }
};

template <class Kind = detail::xfer::no_kind, class L>
auto with_ragged(L&& layer) {
    using D = std::remove_cvref_t<L>;
    if constexpr (!detail::xfer::wrapper_ok<detail::xfer::with_ragged_sig, D, Kind>())
        return detail::xfer::wrapper_failure<detail::xfer::with_ragged_sig, D, Kind>();
    else return WithRagged<D, Kind>(D(std::forward<L>(layer)));
}

}  // namespace tenon
