// bidirectional(l2r[, r2l]): Padded -> Padded. Runs l2r on the sequences as they are and r2l
// on each sequence reversed within its length, turns r2l's output back to the original order
// (so step t of both halves belongs to input step t) and concatenates the two along the
// features: Z = [l2r(X), rev(r2l(rev(X)))]. r2l defaults to a copy of l2r (distinct weights
// once initialised, as Thinc's l2r.copy()). Thinc 8.1's version means the same but its
// _reverse is the identity (data[::1]) and its _split gives r2l the first half of dZ; tenon
// does what the docstring says (docs/combinators.md).
#pragma once
#include <array>
#include <cstddef>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tenon/combinators/detail/parallel.hpp"
#include "tenon/lower/lowered_as.hpp"

namespace tenon {

namespace check {
// E026: bidirectional() of a layer that does not map Padded to Padded.
template <class LayerAt, class Expects, class Produces>
struct bidirectional_types {
    static_assert(always_false<LayerAt>,
                  "[tenon-E026] bidirectional(l2r, r2l): both layers must map Padded to Padded (layer<I> "
                  "expects_type<T>, produces_type<U>: see the instantiation line); wrap a layer of arrays in "
                  "with_array(...)");
};
template <class L, class R>
struct bidirectional_check_of {
    static constexpr extent_t nl = widths::static_nI<L>(), nr = widths::static_nI<R>();
    using type = std::conditional_t<
        !std::is_same_v<typename L::In, tenon::Padded> || !std::is_same_v<typename L::Out, tenon::Padded>,
        bidirectional_types<layer<0>, expects_type<name_t<typename L::In>>, produces_type<name_t<typename L::Out>>>,
        std::conditional_t<
            !std::is_same_v<typename R::In, tenon::Padded> || !std::is_same_v<typename R::Out, tenon::Padded>,
            bidirectional_types<layer<1>, expects_type<name_t<typename R::In>>,
                                produces_type<name_t<typename R::Out>>>,
            std::conditional_t<nl != dyn && nr != dyn && nl != nr,
                               input_widths<bidirectional_combinator, layer<1>, expects_width<nr>, layer<0>,
                                            expects_width<nl>>,
                               ok>>>;
};
template <class L, class R>
using bidirectional_check = typename bidirectional_check_of<L, R>::type;
}  // namespace check

template <Model L, Model R>
class Bidirectional : public Layer<Bidirectional<L, R>, Padded, Padded> {
    static_assert(sizeof(check::bidirectional_check<L, R>) > 0);  // E026, E028
    using Base = Layer<Bidirectional<L, R>, Padded, Padded>;
    friend Base;

public:
    using typename Base::In;
    using typename Base::InView;
    using typename Base::Out;
    using typename Base::OutView;
    static constexpr extent_t static_nI =
        widths::static_nI<L>() != dyn ? widths::static_nI<L>() : widths::static_nI<R>();
    static constexpr extent_t static_nO = widths::static_nO<L>() != dyn && widths::static_nO<R>() != dyn
                                                 ? widths::static_nO<L>() + widths::static_nO<R>()
                                                 : dyn;
    // lower(): l2r, and r2l between two reverse stages, then a concat stage (lower/lowered_as.hpp).
    static constexpr lowering::BidirectionalBranches lowered_as{};
    template <extent_t W>
    using with_nI = Bidirectional<typename widths::rebind_nI<L, W>::type, typename widths::rebind_nI<R, W>::type>;
    template <extent_t W>
    using nested_failure = widths::first_failure_t<widths::nested_failure_t<L, W>, widths::nested_failure_t<R, W>>;

    Bidirectional(L l2r, R r2l)
        : Base("bi" + l2r.name(), {{"nO", as_dim(static_nO)}, {"nI", as_dim(static_nI)}}, {}), l2r_(std::move(l2r)),
          r2l_(std::move(r2l)) {
        if (l2r_.is_initialized() && r2l_.is_initialized()) {
            sync_dims();
            this->mark_initialized();
        }
    }
    template <class L2, class R2>
        requires(!std::is_same_v<Bidirectional<L2, R2>, Bidirectional>)
    explicit Bidirectional(Bidirectional<L2, R2>&& o)
        : Bidirectional(L(std::move(o).l2r()), R(std::move(o).r2l())) {}

    L& l2r() & noexcept { return l2r_; }
    R& r2l() & noexcept { return r2l_; }
    const L& l2r() const& noexcept { return l2r_; }
    const R& r2l() const& noexcept { return r2l_; }
    L&& l2r() && noexcept { return std::move(l2r_); }
    R&& r2l() && noexcept { return std::move(r2l_); }

    void for_each_child(const std::function<void(Node&)>& f) override {
        f(l2r_);
        f(r2l_);
    }

    struct Backprop {
        const Bidirectional* model = nullptr;
        typename L::Backprop bl;
        typename R::Backprop br;
        std::size_t wl = 0, wr = 0;
        detail::Layout layout;
        Padded operator()(const Padded& dZ) const {
            if (model && detail::layout_of(dZ) != layout)
                throw ShapeError(model->name() + ": backprop: expected a gradient shaped like the output, " +
                                     detail::layout_vec_str(layout, detail::layout_kind_of<std::remove_cvref_t<decltype(dZ)>>()) +
                                     ", but found " + detail::layout_str(dZ),
                                 "tenon-E163");
            Padded dX = bl(detail::slice_value<Padded>(dZ, 0, wl));
            const Padded dXr = br(detail::reverse_in_lengths(detail::slice_value<Padded>(dZ, wl, wr)));
            detail::add_into(dX, detail::reverse_in_lengths(dXr), "bidirectional: backprop", "tenon-E163");
            return dX;
        }
    };

private:
    void init_impl(const Padded* X, const Padded* Y) {
        std::size_t nI = detail::sample_width(X);
        if (nI == dyn && this->has_dim("nI")) nI = this->get_dim("nI");
        detail::offer_dim(l2r_, "nI", nI);
        detail::offer_dim(r2l_, "nI", nI);
        if (Y) {
            // Y's features are l2r's then r2l's: split by the widths known, else in halves.
            const std::size_t w = detail::width_of(*Y);
            const std::size_t l = l2r_.has_dim("nO") ? l2r_.get_dim("nO")
                                  : r2l_.has_dim("nO") && r2l_.get_dim("nO") <= w ? w - r2l_.get_dim("nO")
                                                                                 : w / 2;
            if (l > w)
                throw ShapeError(this->name() + ": initialize: Y has width " + std::to_string(w) + " but " +
                                     l2r_.name() + " alone produces " + std::to_string(l),
                                 "tenon-E163");
            const Padded yl = detail::slice_value<Padded>(*Y, 0, l), yr = detail::slice_value<Padded>(*Y, l, w - l);
            l2r_.initialize_from(X, &yl);
            r2l_.initialize_from(X, &yr);
        } else {
            l2r_.initialize_from(X, nullptr);
            r2l_.initialize_from(X, nullptr);
        }
        sync_dims();
        this->mark_initialized();
    }
    void sync_dims() {
        const Node* c[] = {&l2r_, &r2l_};
        for (const Node* n : c)
            if (n->has_dim("nI")) this->set_dim("nI", n->get_dim("nI"), true);
        if (l2r_.has_dim("nO") && r2l_.has_dim("nO"))
            this->set_dim("nO", l2r_.get_dim("nO") + r2l_.get_dim("nO"), true);
    }

    Padded join(const Padded& yl, const Padded& yr_reversed) const {
        const Padded yr = detail::reverse_in_lengths(yr_reversed);
        const std::array<const Padded*, 2> both{&yl, &yr};
        return detail::concat_last<Padded>(both, this->name(), "tenon-E163");
    }
    Padded predict_impl(const Padded& X) const {
        return join(l2r_.predict_inner(X), r2l_.predict_inner(detail::reverse_in_lengths(X)));
    }
    std::pair<Padded, Backprop> forward_impl(const Padded& X, bool is_train) {
        Backprop bp;
        bp.model = this;
        auto [yl, bl] = l2r_.update_inner(X, is_train);
        auto [yr, br] = r2l_.update_inner(detail::reverse_in_lengths(X), is_train);
        bp.bl = std::move(bl);
        bp.br = std::move(br);
        bp.wl = detail::width_of(yl);
        bp.wr = detail::width_of(yr);
        Padded Z = join(yl, yr);
        bp.layout = detail::layout_of(Z);
        return {std::move(Z), std::move(bp)};
    }

    L l2r_;
    R r2l_;
};

namespace detail {
template <class L, class R>
auto make_bidirectional(L&& l2r, R&& r2l) {
    using DL = std::remove_cvref_t<L>;
    using DR = std::remove_cvref_t<R>;
    using Check = check::bidirectional_check<DL, DR>;
    if constexpr (!std::is_same_v<Check, check::ok>) {
        check::report<Check>();  // E026, E028: said here, at the call
        return failed_model{};
    } else {
        constexpr extent_t W = common_static_nI<DL, DR>;
        using TL = typename widths::rebind_nI<DL, W>::type;
        using TR = typename widths::rebind_nI<DR, W>::type;
        return Bidirectional<TL, TR>(TL(DL(std::forward<L>(l2r))), TR(DR(std::forward<R>(r2l))));
    }
}
}  // namespace detail

// bidirectional(l2r): r2l is a copy of l2r (a new node; its own weights once initialised).
template <class L>
    requires Model<L>
auto bidirectional(L&& l2r) {
    const std::remove_cvref_t<L> r2l(std::as_const(l2r));
    return detail::make_bidirectional(std::forward<L>(l2r), r2l);
}
template <class L, class R>
    requires(Model<L> && Model<R>)
auto bidirectional(L&& l2r, R&& r2l) {
    return detail::make_bidirectional(std::forward<L>(l2r), std::forward<R>(r2l));
}

// With a failed model (its error is already said): a failed model (model/failed_model.hpp).
template <class... A>
    requires(any_failed_model<A...>)
failed_model bidirectional(A&&...) noexcept {
    return {};
}

}  // namespace tenon
