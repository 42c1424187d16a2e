// with_flatten(layer): run a layer on a list of items (List<A> -> List<B>, one output per
// item) over a batch of such lists: NestedList<A> = std::vector<List<A>> -> NestedList<B>
// (e.g. the sentences of each document). The lists are concatenated, the layer runs once,
// and its output is split again at the lists' sizes. This is Thinc's with_flatten.v2
// (with_flatten_v2); Thinc's with_flatten.v1 takes a layer whose output is one array and
// returns a list of arrays split at the lists' sizes, and its backward pass splits a list
// along axis -1 (it fails); tenon offers the v2 semantics under both names.
#pragma once
#include <optional>

#include "tenon/transfers/detail/transfer.hpp"

namespace tenon {

// A batch of lists of arrays (List<List<A>> in Thinc's terms; List<A> holds arrays only).
template <class A>
using NestedList = std::vector<List<A>>;

namespace detail::xfer {
template <class L>
inline constexpr bool flatten_layer_ok = is_list_v<typename L::In> && is_list_v<typename L::Out>;

// The items of all lists in one list, and the lists' sizes.
template <class A>
List<A> concat_lists(const NestedList<A>& xs) {
    List<A> flat;
    std::size_t n = 0;
    for (const auto& x : xs) n += x.size();
    flat.reserve(n);
    for (const auto& x : xs) flat.insert(flat.end(), x.begin(), x.end());
    return flat;
}
template <class A>
NestedList<A> split_list(List<A>&& flat, const std::vector<std::size_t>& sizes) {
    NestedList<A> out(sizes.size());
    std::size_t k = 0;
    for (std::size_t i = 0; i < sizes.size(); ++i)
        for (std::size_t j = 0; j < sizes[i]; ++j) out[i].push_back(std::move(flat[k++]));
    return out;
}
}  // namespace detail::xfer

template <class L>
class WithFlatten : public detail::xfer::Wrapper<WithFlatten<L>, L, NestedList<detail::xfer::element_t<typename L::In>>,
                                                 NestedList<detail::xfer::element_t<typename L::Out>>> {
    using LI = typename L::In;
    using LO = typename L::Out;
    using A = detail::xfer::element_t<LI>;
    using B = detail::xfer::element_t<LO>;
    using Base = detail::xfer::Wrapper<WithFlatten, L, NestedList<A>, NestedList<B>>;
    using LayerBase = Layer<WithFlatten, NestedList<A>, NestedList<B>>;
    friend LayerBase;
    friend Base;

public:
    using typename LayerBase::In;
    using typename LayerBase::InView;
    using typename LayerBase::Out;
    using typename LayerBase::OutView;

    template <class L2>
        requires(!std::is_same_v<L2, L>)
    explicit WithFlatten(WithFlatten<L2>&& o) : Base(std::move(o)) {}

    explicit WithFlatten(L layer) : Base("with_flatten", std::move(layer)) {
        detail::xfer::take_child_dims(*this, this->layer_);  // the layer's widths (options), for the models around this one
    }

    struct Backprop {
        typename L::Backprop inner;
        const WithFlatten* model = nullptr;
        std::vector<std::size_t> sizes;
        In operator()(OutView dY) const {
            const std::string& who = model->name();
            bool same = dY.size() == sizes.size();
            for (std::size_t i = 0; same && i < sizes.size(); ++i) same = dY[i].size() == sizes[i];
            if (!same) {
                std::vector<std::size_t> found;
                for (const auto& d : dY) found.push_back(d.size());
                detail::xfer::throw_layout(who, "lists of sizes", sizes_str(sizes), sizes_str(found));
            }
            LI dXf = inner(detail::xfer::concat_lists(dY));
            return detail::xfer::split_list(std::move(dXf), sizes);
        }
    };

private:
    static std::string sizes_str(const std::vector<std::size_t>& v) {
        std::string s = "[";
        for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
        return s + "]";
    }
    void init_impl(const In* X, const Out* Y) {
        std::optional<LI> x;
        std::optional<LO> y;
        if (X) x = detail::xfer::concat_lists(*X);
        if (Y) y = detail::xfer::concat_lists(*Y);
        // Without a sample Y, a width given to this model as nO (by the model around it) reaches
        // the layer, as Y would.
        if (!y || y->empty()) widths::offer(this->layer(), "nO", widths::known(*this, "nO"));
        this->init_child(x && !x->empty() ? &*x : nullptr, y && !y->empty() ? &*y : nullptr);
    }
    template <class Self>
    static Out apply(Self& self, const In& X, bool is_train, Backprop* bp) {
        std::vector<std::size_t> sizes;
        for (const auto& x : X) sizes.push_back(x.size());
        LO Yf = Base::call(self, detail::xfer::concat_lists(X), is_train, bp);
        std::size_t n = 0;
        for (auto s : sizes) n += s;
        if (Yf.size() != n) detail::xfer::throw_rows(self.name(), "number of items", n, Yf.size());
        if (bp) bp->sizes = sizes;
        return detail::xfer::split_list(std::move(Yf), sizes);
    }
};

template <class L>
auto with_flatten(L&& layer) {
    using D = std::remove_cvref_t<L>;
    if constexpr (is_failed_model<D>) {
        return failed_model{};  // its error is already said
    } else if constexpr (!Model<D>) {
        check::report<check::transfer_argument<check::with_flatten, check::not_a_model<check::name_t<D>>>>();
        return failed_model{};
    } else if constexpr (!detail::xfer::flatten_layer_ok<D>) {
        check::report<check::with_flatten_layer<check::inner_input<check::name_t<typename D::In>>,
                                                check::inner_output<check::name_t<typename D::Out>>>>();
        return failed_model{};
    } else {
        return WithFlatten<D>(D(std::forward<L>(layer)));
    }
}
// Thinc's name for the same semantics.
template <class L>
auto with_flatten_v2(L&& layer) {
    return with_flatten(std::forward<L>(layer));
}

}  // namespace tenon
