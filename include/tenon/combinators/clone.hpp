// clone(layer, n): n copies of a layer chained, each with its own weights (copies are made
// before initialisation, so each is initialised separately). n == 0 is the identity, as in
// Thinc. The layer must map its data type to itself. Like a chain, a clone has dims nI (its
// first copy's) and nO (its last copy's); without a sample, initialize() hands the clone's
// nI to the first copy, each copy's nO to the next copy as its nI, and the clone's nO to the
// last copy (as a sample Y would), so the widths flow as they do with data.
#pragma once
#include <new>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tenon/model/diagnostics.hpp"
#include "tenon/lower/lowered_as.hpp"
#include "tenon/model/layer.hpp"
#include "tenon/model/widths.hpp"

namespace tenon {

template <extent_t NO, extent_t NI, extent_t NP>
class Maxout;

namespace check {
// Maxout<nO, nI> with a small nI and no nP: the pieces meant (E016 says so).
template <class L>
inline constexpr bool clone_of_maxout_pieces = false;
template <extent_t NO, extent_t NI>
inline constexpr bool clone_of_maxout_pieces<Maxout<NO, NI, dyn>> = NI <= 8;
template <class L, class E, class P>
using clone_widths_of = std::conditional_t<clone_of_maxout_pieces<L>, clone_widths_maxout<L, E, P>, clone_widths<L, E, P>>;
// The checks of clone(layer, n): E003 where the layer's output type is not its input type,
// else E016 where its static widths differ; `ok` arguments when copies of it can be chained.
template <class L, extent_t NI = widths::static_nI<L>(), extent_t NO = widths::static_nO<L>()>
using clone_check = std::conditional_t<
    !std::is_same_v<typename L::In, typename L::Out>,
    clone_types<L, expects_type<name_t<typename L::In>>, produces_type<name_t<typename L::Out>>>,
    std::conditional_t<NI != dyn && NO != dyn && NI != NO, clone_widths_of<L, expects_width<NI>, produces_width<NO>>,
                       clone_widths<ok, ok, ok>>>;
// The same check as a failure for widths::nested_failure: void when copies of L can be chained.
template <class L>
using clone_failure = std::conditional_t<std::is_same_v<clone_check<L>, clone_widths<ok, ok, ok>>, void, clone_check<L>>;
}  // namespace check

namespace detail {
// A clone's copies: made once (their number is fixed when the clone is made), never
// reallocated; one can be removed (remove_node). Only the copies' move and copy constructors
// and destructor are compiled, not std::vector's machinery for every layer type.
template <class L>
class Copies {
public:
    Copies() noexcept = default;
    explicit Copies(std::size_t capacity)
        : p_(capacity ? static_cast<L*>(::operator new(capacity * sizeof(L), std::align_val_t(alignof(L)))) : nullptr),
          cap_(capacity) {}
    Copies(const Copies& o) : Copies(o.n_) {
        for (std::size_t i = 0; i < o.n_; ++i) emplace_back(o.p_[i]);
    }
    Copies(Copies&& o) noexcept : p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)), cap_(std::exchange(o.cap_, 0)) {}
    Copies& operator=(Copies o) noexcept {
        std::swap(p_, o.p_);
        std::swap(n_, o.n_);
        std::swap(cap_, o.cap_);
        return *this;
    }
    ~Copies() {
        while (n_) p_[--n_].~L();
        if (p_) ::operator delete(p_, std::align_val_t(alignof(L)));
    }
    template <class... A>
    L& emplace_back(A&&... a) {  // (within the capacity)
        L* at = ::new (static_cast<void*>(p_ + n_)) L(std::forward<A>(a)...);
        ++n_;
        return *at;
    }
    // Removes copy i; the later copies move down one place.
    void erase(std::size_t i) {
        p_[i].~L();
        for (std::size_t j = i + 1; j < n_; ++j) {
            ::new (static_cast<void*>(p_ + j - 1)) L(std::move(p_[j]));
            p_[j].~L();
        }
        --n_;
    }
    std::size_t size() const noexcept { return n_; }
    bool empty() const noexcept { return n_ == 0; }
    L& operator[](std::size_t i) noexcept { return p_[i]; }
    const L& operator[](std::size_t i) const noexcept { return p_[i]; }
    L& front() noexcept { return p_[0]; }
    const L& front() const noexcept { return p_[0]; }
    L& back() noexcept { return p_[n_ - 1]; }
    const L& back() const noexcept { return p_[n_ - 1]; }
    L* begin() noexcept { return p_; }
    L* end() noexcept { return p_ + n_; }
    const L* begin() const noexcept { return p_; }
    const L* end() const noexcept { return p_ + n_; }

private:
    L* p_ = nullptr;
    std::size_t n_ = 0, cap_ = 0;
};
}  // namespace detail

template <Model L>
class Clone : public Layer<Clone<L>, typename L::In, typename L::Out> {
    static_assert(sizeof(check::clone_check<L>) > 0);  // E003, E016
    using Base = Layer<Clone<L>, typename L::In, typename L::Out>;
    friend Base;

public:
    using typename Base::In;
    using typename Base::InView;
    using typename Base::Out;
    using typename Base::OutView;
    // Unknown when n may be 0 (the identity); a clone of one layer type keeps its widths.
    static constexpr extent_t static_nI = widths::static_nI<L>();
    static constexpr extent_t static_nO = widths::static_nO<L>();
    static constexpr bool width_preserving = widths::width_preserving<L>;
    using wrapped = L;  // (the checks look through a clone: a residual in a clone is E025)
    static constexpr lowering::CloneCopies lowered_as{};  // lower(): the copies' stages in order
    // After a layer of static width W (chain's width propagation): the width flows into the
    // copies, so a mismatch inside them is a compile error wherever the clone is nested.
    template <extent_t W>
    using with_nI = Clone<typename widths::rebind_nI<L, W>::type>;
    // What fails inside the layer at width W, else its copies at W when they cannot be chained
    // (clone(Relu<64>(), 3) after a 32-wide layer: E016 where the chain is made).
    template <extent_t W>
    using nested_failure = widths::first_failure_t<widths::nested_failure_t<L, W>,
                                                   check::clone_failure<typename widths::rebind_nI<L, W>::type>>;

    Clone(const L& layer, std::size_t n) : Base("clone", {{"nO", as_dim(static_nO)}, {"nI", as_dim(static_nI)}}, {}) {
        copies_ = detail::Copies<L>(n);
        for (std::size_t i = 0; i < n; ++i) copies_.emplace_back(layer);
        this->name_ = n ? "clone(" + layer.name() + " x" + std::to_string(n) + ")" : "noop";
        sync_dims();  // widths the layer already knows (its options), for the models around it
        // n == 0 is the identity; copies of an initialised layer are ready to use as they are.
        if (n == 0 || layer.is_initialized()) this->mark_initialized();
    }

    // From the copies before the width reached them (with_nI): each moved in, converted.
    template <class U>
        requires(!std::is_same_v<U, L>)
    explicit Clone(Clone<U>&& other) : Base("clone", {{"nO", as_dim(static_nO)}, {"nI", as_dim(static_nI)}}, {}) {
        copies_ = detail::Copies<L>(other.size());
        bool all_initialized = true;
        for (std::size_t i = 0; i < other.size(); ++i) {
            copies_.emplace_back(std::move(other[i]));
            all_initialized = all_initialized && copies_.back().is_initialized();
        }
        this->name_ = other.name();
        sync_dims();
        if (all_initialized) this->mark_initialized();
    }

    std::size_t size() const noexcept { return copies_.size(); }
    L& operator[](std::size_t i) noexcept { return copies_[i]; }
    const L& operator[](std::size_t i) const noexcept { return copies_[i]; }

    void for_each_child(const std::function<void(Node&)>& f) override {
        for (auto& c : copies_) f(c);
    }
    // remove_node's hook: the copies are a dynamic list, so one can go (the later copies
    // move down one place; Node::remove_node re-points the refs).
    bool remove_child(Node& child) override {
        if constexpr (std::is_move_constructible_v<L>) {
            for (std::size_t i = 0; i < copies_.size(); ++i)
                if (&copies_[i] == &child) {
                    copies_.erase(i);
                    if (copies_.empty()) {
                        this->name_ = "noop";
                        this->mark_initialized();  // the identity
                    } else {
                        this->name_ = "clone(" + copies_.front().name() + " x" + std::to_string(copies_.size()) + ")";
                    }
                    return true;
                }
        }
        return false;
    }

    struct Backprop {
        detail::scratch_vector<typename L::Backprop> bps;  // (from the block cache)
        In operator()(OutView dY) const {
            if (bps.empty()) return In(dY);
            In d = bps.back()(dY);
            for (std::size_t i = bps.size() - 1; i-- > 0;) d = bps[i](d);
            return d;
        }
    };

private:
    void init_impl(const std::remove_reference_t<InView>* X, const std::remove_reference_t<OutView>* Y) {
        std::optional<Out> cur;
        // The width reaching copy i: the clone's nI, then copy i - 1's nO.
        std::size_t width = widths::known(*this, "nI");
        for (std::size_t i = 0; i < copies_.size(); ++i) {
            const bool last = i + 1 == copies_.size();
            L& c = copies_[i];
            if (i > 0 && width != dyn && c.has_dim("nI") && c.get_dim("nI") != width)
                throw ShapeError(this->name() + ": copy " + std::to_string(i) + " (" + c.name() +
                                     ") expects input width " + std::to_string(c.get_dim("nI")) + " but copy " +
                                     std::to_string(i - 1) + " produces " + std::to_string(width) +
                                     " (the copies are chained, so the layer's nO must be its nI)",
                                 "tenon-E016");
            // Without a sample, the widths the clone knows, as chain hands them on; the clone's
            // nO reaches the last copy only (where Y would go).
            if (!cur && !X) widths::offer(c, "nI", width);
            if (last && !Y) widths::offer(c, "nO", widths::known(*this, "nO"));
            if (cur) {
                const InView v = *cur;
                copies_[i].initialize_from(&v, last ? Y : nullptr);
                if (!last) cur = copies_[i].predict_inner(v);
            } else {
                copies_[i].initialize_from(X, last ? Y : nullptr);
                if (X && !last) cur = copies_[i].predict_inner(*X);
            }
            if (c.has_dim("nO")) width = c.get_dim("nO");
            else if (!widths::width_preserving<L>) width = dyn;
        }
        sync_dims();
        this->mark_initialized();
    }
    // The clone's nI is its first copy's, its nO its last copy's (where they know them).
    void sync_dims() {
        if (copies_.empty()) return;
        if (copies_.front().has_dim("nI")) this->set_dim("nI", copies_.front().get_dim("nI"), true);
        if (copies_.back().has_dim("nO")) this->set_dim("nO", copies_.back().get_dim("nO"), true);
    }
    Out predict_impl(InView X) const {
        if (copies_.empty()) return Out(X);
        Out cur = copies_[0].predict_inner(X);
        for (std::size_t i = 1; i < copies_.size(); ++i) cur = copies_[i].predict_inner(cur);
        return cur;
    }
    std::pair<Out, Backprop> forward_impl(InView X, bool is_train) {
        Backprop bp;
        if (copies_.empty()) return {Out(X), std::move(bp)};
        bp.bps.reserve(copies_.size());
        auto [y0, b0] = copies_[0].update_inner(X, is_train);
        bp.bps.push_back(std::move(b0));
        Out cur = std::move(y0);
        for (std::size_t i = 1; i < copies_.size(); ++i) {
            auto [y, b] = copies_[i].update_inner(cur, is_train);
            bp.bps.push_back(std::move(b));
            cur = std::move(y);
        }
        return {std::move(cur), std::move(bp)};
    }

    detail::Copies<L> copies_;
};

template <Model L>
auto clone(L&& layer, std::size_t n) {
    using D = std::remove_cvref_t<L>;
    if constexpr (!std::is_same_v<check::clone_check<D>, check::clone_widths<check::ok, check::ok, check::ok>>) {
        check::report<check::clone_check<D>>();  // E003, E016: said here, at the call
        return failed_model{};
    } else {
        return Clone<D>(layer, n);
    }
}
// clone(n, layer), the arguments swapped: E007 (taken only when the second argument is a
// model and the first is not).
template <class N, Model L>
    requires(!Model<N>)
auto clone(N&&, L&&) {
    check::report<check::clone_argument<check::not_a_model<check::name_t<N>>>>();
    return failed_model{};
}

// With a failed model (its error is already said): a failed model (model/failed_model.hpp).
template <class... A>
    requires(any_failed_model<A...>)
failed_model clone(A&&...) noexcept {
    return {};
}

}  // namespace tenon
