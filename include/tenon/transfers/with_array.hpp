// with_array<Kind>(layer, pad = 0): run a layer on arrays (e.g. Relu: Floats2d -> Floats2d)
// over sequence data, as Thinc's with_array: the rows of every sequence go through the
// layer as one array, and the output has the input's kind and layout. Kind is the model's
// input type, one of (A = the layer's input array type, B its output type):
//   A                       the layer itself (Thinc passes arrays through)
//   List<A>                 -> List<B>: the arrays concatenated (with `pad` zero rows
//                              before, between and after the non-empty ones, as Thinc's
//                              ops.flatten) and split again
//   BasicRagged<A> (Ragged) -> BasicRagged<B>: the data, same lengths
//   BasicPadded<A> (A of rank >= 3) -> BasicPadded<B>: the data as it is
//   BasicPadded<A'> (A of rank 2, A' = A with a leading axis: Padded for Floats2d)
//                           -> Padded: the (T, B, N) data seen as (T*B, N) rows, as Thinc's
//                              with_array2d (Thinc's with_array hands the 3d data to the
//                              layer, which a dense layer refuses: a known defect)
// The kind is a template argument so that the model's signature is a type that chain checks:
//   auto m = list2ragged() >> with_array<Ragged>(Relu<64>()) >> ragged2list();
// with_array2d<Kind>(layer) (with_array2d.hpp) is the same for layers on 2d arrays only.
#pragma once
#include <optional>

#include "tenon/transfers/detail/transfer.hpp"

namespace tenon {

namespace detail::xfer {
enum class array_mode { none, direct, list, ragged, padded_direct, padded_2d };

template <class A, class B, class Kind>
constexpr array_mode array_mode_of() {
    if constexpr (!is_tarray_v<A> || !is_tarray_v<B>) return array_mode::none;
    else if constexpr (std::is_same_v<Kind, A>) return array_mode::direct;
    else if constexpr (std::is_same_v<Kind, List<A>>) return array_mode::list;
    else if constexpr (std::is_same_v<Kind, BasicRagged<A>>) return array_mode::ragged;
    else if constexpr (A::rank >= 3 && B::rank >= 3 && std::is_same_v<Kind, BasicPadded<A>>)
        return array_mode::padded_direct;
    else if constexpr (A::rank == 2 && B::rank == 2 && std::is_same_v<Kind, BasicPadded<add_axis_t<A>>>)
        return array_mode::padded_2d;
    else return array_mode::none;
}
template <class B, array_mode M>
struct array_out {
    using type = void;
};
template <class B>
struct array_out<B, array_mode::direct> {
    using type = B;
};
template <class B>
struct array_out<B, array_mode::list> {
    using type = List<B>;
};
template <class B>
struct array_out<B, array_mode::ragged> {
    using type = BasicRagged<B>;
};
template <class B>
struct array_out<B, array_mode::padded_direct> {
    using type = BasicPadded<B>;
};
template <class B>
struct array_out<B, array_mode::padded_2d> {
    using type = BasicPadded<add_axis_t<B>>;
};

// What with_array (Two = false) or with_array2d (Two = true) over a layer L takes.
template <class L, bool Two>
struct with_array_sig {
    using A = typename L::In;
    using B = typename L::Out;
    static constexpr bool layer_ok =
        Two ? (is_tarray2d_v<A> && is_tarray2d_v<B>) : (is_tarray_v<A> && is_tarray_v<B>);
    using layer_check =
        std::conditional_t<Two, check::with_array2d_layer<check::inner_input<check::name_t<A>>,
                                                          check::inner_output<check::name_t<B>>>,
                           check::with_array_layer<check::inner_input<check::name_t<A>>,
                                                   check::inner_output<check::name_t<B>>>>;
    template <class Kind>
    static constexpr bool kind_ok = array_mode_of<A, B, Kind>() != array_mode::none;
    static auto accepts_of() {
        if constexpr (!layer_ok) return check::accepts<>{};
        else if constexpr (A::rank == 2)
            return check::accepts<check::name_t<A>, check::List<check::name_t<A>>, check::name_t<BasicRagged<A>>,
                                  check::name_t<BasicPadded<add_axis_t<A>>>>{};
        else if constexpr (A::rank >= 3)
            return check::accepts<check::name_t<A>, check::List<check::name_t<A>>, check::name_t<BasicRagged<A>>,
                                  check::name_t<BasicPadded<A>>>{};
        else return check::accepts<check::name_t<A>, check::List<check::name_t<A>>, check::name_t<BasicRagged<A>>>{};
    }
    using accepts = decltype(accepts_of());
};
template <class L>
using with_array_sig_any = with_array_sig<L, false>;
template <class L>
using with_array_sig_2d = with_array_sig<L, true>;
template <>
struct wrapper_name<with_array_sig_any> {
    using type = check::with_array;
};
template <>
struct wrapper_name<with_array_sig_2d> {
    using type = check::with_array2d;
};

// An array of type A from sample data of any kind (for initialize: copies).
template <class A, class X>
A inner_array(const X& x, std::size_t pad, const char* who) {
    if constexpr (is_list_v<X>) {
        return flatten(x, pad, who);
    } else if constexpr (is_ragged_v<X>) {
        return A(x.data());
    } else if constexpr (is_padded_v<X>) {
        if constexpr (X::rank == A::rank) {
            return A(x.data());
        } else {  // (T, B, N) as (T*B, N)
            const auto& d = x.data();
            return A(typename A::const_view_type(d.data(), {d.shape(0) * d.shape(1), d.shape(2)}));
        }
    } else {
        return A(x);
    }
}
}  // namespace detail::xfer

template <class L, class Kind, bool Two = false>
class WithArray
    : public detail::xfer::Wrapper<WithArray<L, Kind, Two>, L, Kind,
                             typename detail::xfer::array_out<typename L::Out,
                                                        detail::xfer::array_mode_of<typename L::In, typename L::Out, Kind>()>::type> {
    using A = typename L::In;
    using B = typename L::Out;
    static constexpr detail::xfer::array_mode mode = detail::xfer::array_mode_of<A, B, Kind>();
    static_assert(mode != detail::xfer::array_mode::none, "with_array: use the creation function with_array<Kind>(layer)");
    using Base = detail::xfer::Wrapper<WithArray, L, Kind, typename detail::xfer::array_out<B, mode>::type>;
    using LayerBase = Layer<WithArray, Kind, typename detail::xfer::array_out<B, mode>::type>;
    friend LayerBase;
    friend Base;
    template <class, class, bool>
    friend class WithArray;

public:
    using typename LayerBase::In;
    using typename LayerBase::InView;
    using typename LayerBase::Out;
    using typename LayerBase::OutView;

    explicit WithArray(L layer, std::size_t pad = 0)
        : Base(Two ? "with_array2d" : "with_array", std::move(layer)), pad_(pad) {
        this->set_fixed_attr("pad", static_cast<std::int64_t>(pad));
        detail::xfer::take_child_dims(*this, this->layer_);  // the layer's widths (options), for the models around this one
    }
    template <class L2>
        requires(!std::is_same_v<L2, L>)
    explicit WithArray(WithArray<L2, Kind, Two>&& o) : Base(std::move(o)), pad_(o.pad_) {}

    std::size_t pad() const noexcept { return pad_; }
    // lower(): the layer's stages on the rows (with pad: a padded space between pad and unpad
    // stages; over a Padded, on its steps x sequences rows, padding included); a layer of 3-d
    // arrays keeps the layers (lower/lowered_as.hpp).
    static constexpr lowering::OnRows lowered_as{};
    static constexpr bool plan_rows = mode == detail::xfer::array_mode::direct ||
                                      mode == detail::xfer::array_mode::list ||
                                      mode == detail::xfer::array_mode::ragged ||
                                      mode == detail::xfer::array_mode::padded_2d;
    static constexpr lowering::PaddedRows plan_padded =
        mode == detail::xfer::array_mode::padded_2d ? lowering::PaddedRows::steps : lowering::PaddedRows::none;
    static constexpr bool plan_pads = mode == detail::xfer::array_mode::list;  // pad applies to lists only

    struct Backprop {
        typename L::Backprop inner;
        const WithArray* model = nullptr;
        Ints1d lengths;             // list, ragged: the sequences' rows
        detail::xfer::PaddedLayout layout;  // padded: the input's layout
        In operator()(OutView dY) const {
            const std::string& who = model->name();
            if constexpr (mode == detail::xfer::array_mode::direct) {
                return inner(dY);
            } else if constexpr (mode == detail::xfer::array_mode::list) {
                detail::xfer::check_list_lengths(who, lengths, dY);
                if (dY.empty()) return In{};
                const B dYf = detail::xfer::flatten(dY, model->pad_, who.c_str());
                const A dXf = inner(dYf);
                return detail::xfer::unflatten<A>(dXf, lengths, model->pad_);
            } else if constexpr (mode == detail::xfer::array_mode::ragged) {
                detail::xfer::check_lengths(who, lengths, dY.lengths());
                return In(inner(dY.data()), lengths);
            } else if constexpr (mode == detail::xfer::array_mode::padded_direct) {
                layout.check(who, dY);
                return dY.with_data(inner(dY.data()));
            } else {
                layout.check(who, dY);
                const auto& d = dY.data();
                const std::size_t T = d.shape(0), N = d.shape(1);
                const A dX = inner(typename B::const_view_type(d.data(), {T * N, d.shape(2)}));
                return dY.with_data(to3d(dX, T, N));
            }
        }
    };

private:
    void init_impl(detail::xfer::sample_ptr<In> X, detail::xfer::sample_ptr<Out> Y) {
        std::optional<A> x;
        std::optional<B> y;
        const char* who = this->name().c_str();
        if constexpr (mode == detail::xfer::array_mode::list) {
            // (An empty list says nothing about the widths.)
            if (X && X->empty()) X = nullptr;
            if (Y && Y->empty()) Y = nullptr;
        }
        if (X) x = detail::xfer::inner_array<A>(*X, pad_, who);
        if (Y) y = detail::xfer::inner_array<B>(*Y, pad_, who);
        // Without a sample Y, a width given to this model as nO (by the model around it) reaches
        // the layer, as Y would.
        if (!Y) widths::offer(this->layer(), "nO", widths::known(*this, "nO"));
        this->init_child(x ? &*x : nullptr, y ? &*y : nullptr);
    }

    template <class Self>
    static Out apply(Self& self, InView X, bool is_train, Backprop* bp) {
        const std::string& who = self.name();
        if constexpr (mode == detail::xfer::array_mode::direct) {
            return Base::call(self, X, is_train, bp);
        } else if constexpr (mode == detail::xfer::array_mode::list) {
            const Ints1d lengths = detail::xfer::lengths_of(X);
            if (bp) bp->lengths = lengths;
            // An empty batch: nothing to run the layer on (Thinc's flatten gives a (0, 0) array).
            if (X.empty()) return Out{};
            const A Xf = detail::xfer::flatten(X, self.pad_, who.c_str());
            const detail::SequenceRowsScope rows(lengths.data(), lengths.size(), self.pad_);  // (for errors)
            const B Yf = Base::call(self, Xf, is_train, bp);
            if (Yf.shape(0) != Xf.shape(0)) detail::xfer::throw_rows(who, "number of rows", Xf.shape(0), Yf.shape(0));
            return detail::xfer::unflatten<B>(Yf, lengths, self.pad_);
        } else if constexpr (mode == detail::xfer::array_mode::ragged) {
            if (bp) bp->lengths = X.lengths();
            const detail::SequenceRowsScope rows(X.lengths().data(), X.lengths().size(), 0);  // (for errors)
            B Y = Base::call(self, X.data(), is_train, bp);
            if (Y.shape(0) != X.rows()) detail::xfer::throw_rows(who, "number of rows", X.rows(), Y.shape(0));
            return X.with_data(std::move(Y));
        } else if constexpr (mode == detail::xfer::array_mode::padded_direct) {
            if (bp) bp->layout = detail::xfer::PaddedLayout::of(X);
            B Y = Base::call(self, X.data(), is_train, bp);
            if (Y.shape(0) != X.data().shape(0) || Y.shape(1) != X.data().shape(1))
                detail::xfer::throw_rows(who, "number of steps x sequences", X.data().shape(0) * X.data().shape(1),
                                   Y.shape(0) * Y.shape(1));
            return X.with_data(std::move(Y));
        } else {
            if (bp) bp->layout = detail::xfer::PaddedLayout::of(X);
            const auto& d = X.data();
            const std::size_t T = d.shape(0), N = d.shape(1);
            const B Y = Base::call(self, typename A::const_view_type(d.data(), {T * N, d.shape(2)}), is_train, bp);
            if (Y.shape(0) != T * N) detail::xfer::throw_rows(who, "number of rows (steps x sequences)", T * N, Y.shape(0));
            return X.with_data(to3d(Y, T, N));
        }
    }
    // (T*N, W) rows as a (T, N, W) array.
    template <class M>
    static detail::xfer::add_axis_t<M> to3d(const M& m, std::size_t T, std::size_t N) {
        detail::xfer::add_axis_t<M> out({T, N, m.shape(1)}, uninitialized);
        detail::copy_bytes(out.data(), out.memory(), m.data(), m.memory(), m.size() * sizeof(typename M::value_type));
        return out;
    }

    std::size_t pad_ = 0;
};

template <class Kind = detail::xfer::no_kind, class L>
auto with_array(L&& layer, std::size_t pad = 0) {
    using D = std::remove_cvref_t<L>;
    if constexpr (!detail::xfer::wrapper_ok<detail::xfer::with_array_sig_any, D, Kind>())
        return detail::xfer::wrapper_failure<detail::xfer::with_array_sig_any, D, Kind>();
    else return WithArray<D, Kind, false>(D(std::forward<L>(layer)), pad);
}

}  // namespace tenon
