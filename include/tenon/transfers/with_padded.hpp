// with_padded<Kind>(layer): run a layer on Padded (Padded -> Padded, e.g. an LSTM) over other
// sequence data, as Thinc's with_padded; the output has the input's kind. Kind is the model's
// input type (P = the layer's Padded data type, Floats3d for Padded; A = P without its
// leading axis, Floats2d):
//   BasicPadded<P> (Padded)  the layer itself
//   P (Floats3d)             (T, B, N) data of B sequences all of length T; the output is
//                            the layer's output data (Thinc's "bogus metadata")
//   BasicRagged<A> (Ragged)  converted to Padded and back; the layer must keep the lengths
//   List<A> (List<Floats2d>) converted to Padded and back
// (Thinc's 4-tuple form (data, size_at_t, lengths, indices) is the Padded type here.)
#pragma once
#include <numeric>
#include <optional>

#include "tenon/transfers/detail/transfer.hpp"

namespace tenon {

namespace detail::xfer {
enum class padded_mode { none, direct, array, ragged, list };

template <class LIn, class LOut, class Kind>
constexpr padded_mode padded_mode_of() {
    if constexpr (!is_padded_v<LIn> || !is_padded_v<LOut>) return padded_mode::none;
    else if constexpr (std::is_same_v<Kind, LIn>) return padded_mode::direct;
    else if constexpr (std::is_same_v<Kind, element_t<LIn>>) return padded_mode::array;
    else if constexpr (LIn::rank != 3 || LOut::rank != 3) return padded_mode::none;
    else if constexpr (std::is_same_v<Kind, BasicRagged<drop_axis_t<element_t<LIn>>>>) return padded_mode::ragged;
    else if constexpr (std::is_same_v<Kind, List<drop_axis_t<element_t<LIn>>>>) return padded_mode::list;
    else return padded_mode::none;
}
template <class LOut, padded_mode M>
struct padded_out {
    using type = void;
};
template <class LOut>
struct padded_out<LOut, padded_mode::direct> {
    using type = LOut;
};
template <class LOut>
struct padded_out<LOut, padded_mode::array> {
    using type = element_t<LOut>;
};
template <class LOut>
struct padded_out<LOut, padded_mode::ragged> {
    using type = BasicRagged<drop_axis_t<element_t<LOut>>>;
};
template <class LOut>
struct padded_out<LOut, padded_mode::list> {
    using type = List<drop_axis_t<element_t<LOut>>>;
};

template <class L>
struct with_padded_sig {
    using I = typename L::In;
    using O = typename L::Out;
    static constexpr bool layer_ok = is_padded_v<I> && is_padded_v<O>;
    using layer_check = check::with_padded_layer<check::inner_input<check::name_t<I>>, check::inner_output<check::name_t<O>>>;
    template <class Kind>
    static constexpr bool kind_ok = padded_mode_of<I, O, Kind>() != padded_mode::none;
    static auto accepts_of() {
        if constexpr (!layer_ok) return check::accepts<>{};
        else if constexpr (I::rank == 3) {
            using A = drop_axis_t<element_t<I>>;
            return check::accepts<check::name_t<I>, check::name_t<element_t<I>>, check::name_t<BasicRagged<A>>,
                                  check::List<check::name_t<A>>>{};
        } else return check::accepts<check::name_t<I>, check::name_t<element_t<I>>>{};
    }
    using accepts = decltype(accepts_of());
};
template <>
struct wrapper_name<with_padded_sig> {
    using type = check::with_padded;
};

// (T, B, ...) data as a Padded of B sequences of length T (Thinc's with_padded on an array).
template <class PT, class V>
PT full_padded(const V& x) {
    const std::size_t T = x.shape(0), B = x.shape(1);
    Ints1d size_at_t({T}, uninitialized), lengths({B}, uninitialized), indices({B}, uninitialized);
    for (std::size_t t = 0; t < T; ++t) size_at_t[t] = static_cast<std::int32_t>(B);
    for (std::size_t b = 0; b < B; ++b) {
        lengths[b] = static_cast<std::int32_t>(T);
        indices[b] = static_cast<std::int32_t>(b);
    }
    return PT(typename PT::data_type(x), std::move(size_at_t), std::move(lengths), std::move(indices));
}
// Sample data of any kind as the layer's Padded type (for initialize).
template <class PT, class X>
PT padded_of(const X& x) {
    if constexpr (is_padded_v<X>) return x;
    else if constexpr (is_list_v<X> || is_ragged_v<X>) return to_padded(x);
    else return full_padded<PT>(x);
}
}  // namespace detail::xfer

template <class L, class Kind>
class WithPadded
    : public detail::xfer::Wrapper<
          WithPadded<L, Kind>, L, Kind,
          typename detail::xfer::padded_out<typename L::Out,
                                            detail::xfer::padded_mode_of<typename L::In, typename L::Out, Kind>()>::type> {
    using LI = typename L::In;
    using LO = typename L::Out;
    static constexpr detail::xfer::padded_mode mode = detail::xfer::padded_mode_of<LI, LO, Kind>();
    static_assert(mode != detail::xfer::padded_mode::none, "with_padded: use the creation function with_padded<Kind>(layer)");
    using OutT = typename detail::xfer::padded_out<LO, mode>::type;
    using Base = detail::xfer::Wrapper<WithPadded, L, Kind, OutT>;
    using LayerBase = Layer<WithPadded, Kind, OutT>;
    friend LayerBase;
    friend Base;
    using M = detail::xfer::padded_mode;

public:
    using typename LayerBase::In;
    using typename LayerBase::InView;
    using typename LayerBase::Out;
    using typename LayerBase::OutView;

    template <class L2>
        requires(!std::is_same_v<L2, L>)
    explicit WithPadded(WithPadded<L2, Kind>&& o) : Base(std::move(o)) {}

    explicit WithPadded(L layer) : Base("with_padded", std::move(layer)) {
        detail::xfer::take_child_dims(*this, this->layer_);  // the layer's widths (options), for the models around this one
    }

    // lower(): over a list or a ragged array, the layer's stages on the sequences' rows (an
    // LSTM's stage orders them as the Padded would; a with_array over the Padded, on its steps
    // space); over a Padded, its layer's stages as they are; an array input keeps the layers.
    static constexpr lowering::OnRows lowered_as{};
    static constexpr bool plan_rows = mode == detail::xfer::padded_mode::ragged ||
                                      mode == detail::xfer::padded_mode::list ||
                                      mode == detail::xfer::padded_mode::direct;
    static constexpr lowering::PaddedRows plan_padded =
        mode == detail::xfer::padded_mode::direct ? lowering::PaddedRows::keep : lowering::PaddedRows::none;
    static constexpr bool plan_pads = false;

    struct Backprop {
        typename L::Backprop inner;
        const WithPadded* model = nullptr;
        Ints1d lengths;                     // ragged, list
        detail::xfer::PaddedLayout layout;  // array
        In operator()(OutView dY) const {
            const std::string& who = model->name();
            if constexpr (mode == M::direct) {
                return inner(dY);
            } else if constexpr (mode == M::array) {
                if (dY.shape(0) != layout.steps || dY.shape(1) != layout.lengths.size())
                    detail::xfer::throw_layout(who, "an array with (steps, sequences)",
                                               "(" + std::to_string(layout.steps) + ", " +
                                                   std::to_string(layout.lengths.size()) + ")",
                                               "(" + std::to_string(dY.shape(0)) + ", " + std::to_string(dY.shape(1)) + ")");
                LO dYp(typename LO::data_type(dY), layout.size_at_t, layout.lengths, layout.indices);
                return std::move(inner(dYp)).data();
            } else if constexpr (mode == M::ragged) {
                detail::xfer::check_lengths(who, lengths, dY.lengths());
                return to_ragged(inner(to_padded(dY)));
            } else {
                detail::xfer::check_list_lengths(who, lengths, dY);
                if (dY.empty()) return In{};
                return to_list(inner(to_padded(dY)));
            }
        }
    };

private:
    void init_impl(detail::xfer::sample_ptr<In> X, detail::xfer::sample_ptr<Out> Y) {
        std::optional<LI> x;
        std::optional<LO> y;
        if constexpr (mode == M::list) {
            if (X && X->empty()) X = nullptr;
            if (Y && Y->empty()) Y = nullptr;
        }
        if (X) x = detail::xfer::padded_of<LI>(*X);
        if (Y) y = detail::xfer::padded_of<LO>(*Y);
        // Without a sample Y, a width given to this model as nO (by the model around it) reaches
        // the layer, as Y would.
        if (!Y) widths::offer(this->layer(), "nO", widths::known(*this, "nO"));
        this->init_child(x ? &*x : nullptr, y ? &*y : nullptr);
    }

    template <class Self>
    static Out apply(Self& self, InView X, bool is_train, Backprop* bp) {
        const std::string& who = self.name();
        if constexpr (mode == M::direct) {
            return Base::call(self, X, is_train, bp);
        } else if constexpr (mode == M::array) {
            const LI Xp = detail::xfer::full_padded<LI>(X);
            if (bp) bp->layout = detail::xfer::PaddedLayout::of(Xp);
            return Base::call(self, Xp, is_train, bp).data();
        } else if constexpr (mode == M::ragged) {
            if (bp) bp->lengths = X.lengths();
            auto Y = to_ragged(Base::call(self, to_padded(X), is_train, bp));
            detail::xfer::check_kept_lengths(who, X.lengths(), Y.lengths());
            return Y;
        } else {
            const Ints1d lengths = detail::xfer::lengths_of(X);
            if (bp) bp->lengths = lengths;
            if (X.empty()) return Out{};  // an empty batch: nothing to run the layer on
            auto Ys = to_list(Base::call(self, to_padded(X), is_train, bp));
            detail::xfer::check_kept_lengths(who, lengths, detail::xfer::lengths_of(Ys));
            return Ys;
        }
    }
};

template <class Kind = detail::xfer::no_kind, class L>
auto with_padded(L&& layer) {
    using D = std::remove_cvref_t<L>;
    if constexpr (!detail::xfer::wrapper_ok<detail::xfer::with_padded_sig, D, Kind>())
        return detail::xfer::wrapper_failure<detail::xfer::with_padded_sig, D, Kind>();
    else return WithPadded<D, Kind>(D(std::forward<L>(layer)));
}

}  // namespace tenon
