// minibatch / multibatch: iterate over arrays in batches of rows, optionally shuffled (one
// permutation drawn from the global generator, shared by all the arrays, so rows stay
// aligned). Each batch is a fresh array of the selected rows; the source arrays must outlive
// the loop.
//   for (auto X : minibatch(128, X_train)) ...   (batches are returned by value)
//   for (auto [X, Y] : multibatch(128, X_train, Y_train, shuffle)) ...
// Over a list of items (documents: a List<Ints2d>, a std::vector of anything), batches of
// items, by count (Thinc's minibatch) or by words (spaCy's minibatch_by_words), the size a
// number or a Schedule drawn once per batch (optim/schedules.hpp):
//   for (List<Ints2d> docs : minibatch(compounding(4.0, 32.0, 1.001), train_docs, shuffle)) ...
//   for (List<Ints2d> docs : minibatch_by_words(train_docs, 1000)) ...
#pragma once
#include <algorithm>
#include <concepts>
#include <cstring>
#include <memory>
#include <numeric>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "tenon/model/diagnostics.hpp"
#include "tenon/optim/schedules.hpp"
#include "tenon/random.hpp"
#include "tenon/types/array.hpp"
#include "tenon/types/list.hpp"

namespace tenon {

// Pass `shuffle` as the last argument of minibatch/multibatch to shuffle the rows.
struct Shuffle {
    explicit constexpr Shuffle() = default;
};
inline constexpr Shuffle shuffle{};

namespace detail {
template <class T, extent_t... E>
void gather_rows(const Array<T, E...>& src, const std::size_t* rows, std::size_t n, Array<T, E...>& out) {
    auto shape = src.shape();
    const std::size_t stride = shape[0] ? src.size() / shape[0] : 0;
    shape[0] = n;
    out = Array<T, E...>(shape, uninitialized);
    if (stride == 0) return;  // rows of no values (and no data pointer to copy from)
    for (std::size_t i = 0; i < n; ++i) std::memcpy(out.data() + i * stride, src.data() + rows[i] * stride, stride * sizeof(T));
}
}  // namespace detail

template <class... Arrays>
class Batches {
public:
    // Each array is read where it is (it must outlive the loop), or, given as a temporary
    // (multibatch(32, X, to_categorical(y, 10))), moved into the batches, which keep it.
    template <class... Given>
        requires(sizeof...(Given) == sizeof...(Arrays))
    Batches(std::size_t size, bool shuffled, Given&&... given) : size_(size) {
        [&]<std::size_t... I>(std::index_sequence<I...>) {
            (keep<I>(std::forward<Given>(given)), ...);
        }(std::index_sequence_for<Arrays...>{});
        if (size == 0) throw Error("minibatch/multibatch: the batch size must be >= 1", "tenon-E135");
        check_rows(std::index_sequence_for<Arrays...>{});
        order_.resize(std::get<0>(arrays_)->shape(0));
        std::iota(order_.begin(), order_.end(), std::size_t{0});
        if (shuffled)
            for (std::size_t i = order_.size(); i > 1; --i) std::swap(order_[i - 1], order_[global_rng().below(i)]);
    }

private:
    template <std::size_t I, class G>
    void keep(G&& g) {
        using A = std::tuple_element_t<I, std::tuple<Arrays...>>;
        if constexpr (std::is_lvalue_reference_v<G>) {
            std::get<I>(arrays_) = &g;
        } else {
            auto owned = std::make_shared<const A>(std::move(g));
            std::get<I>(arrays_) = owned.get();
            owned_.push_back(std::move(owned));
        }
    }
    template <std::size_t... I>
    void check_rows(std::index_sequence<I...>) const {
        const std::size_t n = std::get<0>(arrays_)->shape(0);
        std::size_t k = 0;
        ((std::get<I>(arrays_)->shape(0) != n
              ? throw ShapeError("multibatch: array " + std::to_string(k) + " has " +
                                     std::to_string(std::get<I>(arrays_)->shape(0)) + " rows but array 0 has " +
                                     std::to_string(n),
                                 "tenon-E136")
              : void(++k)),
         ...);
    }

public:
    std::size_t size() const noexcept { return (order_.size() + size_ - 1) / size_; }

    using value_type = std::conditional_t<sizeof...(Arrays) == 1, std::tuple_element_t<0, std::tuple<Arrays...>>,
                                          std::tuple<Arrays...>>;

    class iterator {
    public:
        iterator(const Batches* b, std::size_t start) : b_(b), start_(start) {}
        value_type operator*() const {
            const std::size_t n = std::min(b_->size_, b_->order_.size() - start_);
            const std::size_t* rows = b_->order_.data() + start_;
            if constexpr (sizeof...(Arrays) == 1) {
                value_type out;
                detail::gather_rows(*std::get<0>(b_->arrays_), rows, n, out);
                return out;
            } else {
                value_type out;
                [&]<std::size_t... I>(std::index_sequence<I...>) {
                    (detail::gather_rows(*std::get<I>(b_->arrays_), rows, n, std::get<I>(out)), ...);
                }(std::index_sequence_for<Arrays...>{});
                return out;
            }
        }
        iterator& operator++() {
            start_ += b_->size_;
            if (start_ > b_->order_.size()) start_ = b_->order_.size();
            return *this;
        }
        bool operator!=(const iterator& o) const { return start_ != o.start_; }
        bool operator==(const iterator& o) const { return start_ == o.start_; }

    private:
        const Batches* b_;
        std::size_t start_;
    };
    iterator begin() const { return iterator(this, 0); }
    iterator end() const { return iterator(this, order_.size()); }

private:
    std::size_t size_;
    std::tuple<const Arrays*...> arrays_;
    std::vector<std::shared_ptr<const void>> owned_;  // the arrays given as temporaries
    std::vector<std::size_t> order_;
};

namespace detail {
template <class T>
inline constexpr bool is_array_v = false;
template <class T, extent_t... E>
inline constexpr bool is_array_v<Array<T, E...>> = true;

// A list of items to batch: a List<A> or a std::vector of anything (not an array).
template <class C>
concept item_list = !is_array_v<C> && requires(const C& c, C& m, std::size_t i) {
    typename C::value_type;
    { c.size() } -> std::convertible_to<std::size_t>;
    c[i];
    m.push_back(c[i]);
};
// minibatch(size, items) or minibatch(size, items, shuffle): the batchers of items below.
template <class S, class... Args>
inline constexpr bool item_batch_call = [] {
    if constexpr (sizeof...(Args) == 0 || sizeof...(Args) > 2) {
        return false;
    } else {
        using First = std::remove_cvref_t<std::tuple_element_t<0, std::tuple<Args...>>>;
        using Last = std::remove_cvref_t<std::tuple_element_t<sizeof...(Args) - 1, std::tuple<Args...>>>;
        return item_list<First> && (sizeof...(Args) == 1 || std::is_same_v<Last, Shuffle>) &&
               (std::is_convertible_v<const S&, std::size_t> || std::is_same_v<std::remove_cvref_t<S>, Schedule>);
    }
}();

// The arguments of minibatch/multibatch: the batch size, arrays, optionally `shuffle`. `bad`
// is the position of the first argument that does not fit (the size is 0), or batch_ok.
inline constexpr std::size_t batch_ok = static_cast<std::size_t>(-1);
template <class Seq>
struct batches_of;
// (Each batch a failed_model, or a tuple of them: whatever the loop's body does with them, a
// model's begin_update included, is taken silently.)
template <std::size_t... I>
struct batches_of<std::index_sequence<I...>> {
    template <std::size_t>
    using failed = failed_model;
    using item = std::conditional_t<sizeof...(I) == 1, failed_model, std::tuple<failed<I>...>>;
    struct type {
        item batch{};
        const item* begin() const noexcept { return &batch; }
        const item* end() const noexcept { return &batch; }
        std::size_t size() const noexcept { return 0; }
    };
};
template <class S, class... Args>
struct batch_args {
    static constexpr std::size_t n = sizeof...(Args);
    static constexpr bool shuffled = [] {
        const bool is_shuffle[] = {false, std::is_same_v<std::remove_cvref_t<Args>, Shuffle>...};
        return n > 0 && is_shuffle[n];
    }();
    static constexpr std::size_t bad = [] {
        if (!std::is_convertible_v<const S&, std::size_t> || is_array_v<std::remove_cvref_t<S>>) return std::size_t{0};
        const bool is_arr[] = {false, is_array_v<std::remove_cvref_t<Args>>...};
        const std::size_t arrays = shuffled ? n - 1 : n;
        if (arrays == 0) return std::size_t{1};
        for (std::size_t i = 1; i <= arrays; ++i)
            if (!is_arr[i]) return i;
        return batch_ok;
    }();
    using bad_type =
        std::remove_cvref_t<std::tuple_element_t<bad == batch_ok ? n + 1 : bad, std::tuple<S, Args..., void>>>;
    // What the call was meant to return (batches of as many arrays), so that a loop over it
    // adds no error of its own after E014: every argument but a number (a misplaced size, as in
    // minibatch(X, 25)) and `shuffle` stands for an array.
    template <class A>
    static constexpr bool data_arg = !std::is_arithmetic_v<std::remove_cvref_t<A>> &&
                                     !std::is_same_v<std::remove_cvref_t<A>, Shuffle>;
    static constexpr std::size_t meant = std::max<std::size_t>(1, (std::size_t{data_arg<S>} + ... + std::size_t{data_arg<Args>}));
    using meant_type = typename batches_of<std::make_index_sequence<meant>>::type;
};

}  // namespace detail

// (An array given as a temporary is kept by the batches: Batches' constructor.)
template <class T, extent_t... E>
Batches<Array<T, E...>> minibatch(std::size_t size, const Array<T, E...>& X) {
    return Batches<Array<T, E...>>(size, false, X);
}
template <class T, extent_t... E>
Batches<Array<T, E...>> minibatch(std::size_t size, Array<T, E...>&& X) {
    return Batches<Array<T, E...>>(size, false, std::move(X));
}
template <class T, extent_t... E>
Batches<Array<T, E...>> minibatch(std::size_t size, const Array<T, E...>& X, Shuffle) {
    return Batches<Array<T, E...>>(size, true, X);
}
template <class T, extent_t... E>
Batches<Array<T, E...>> minibatch(std::size_t size, Array<T, E...>&& X, Shuffle) {
    return Batches<Array<T, E...>>(size, true, std::move(X));
}

template <class... Xs>
    requires(sizeof...(Xs) >= 1 && (detail::is_array_v<std::remove_cvref_t<Xs>> && ...))
Batches<std::remove_cvref_t<Xs>...> multibatch(std::size_t size, Xs&&... arrays) {
    return Batches<std::remove_cvref_t<Xs>...>(size, false, std::forward<Xs>(arrays)...);
}
// multibatch(size, arrays..., shuffle)
template <class... Args>
    requires(sizeof...(Args) >= 2 && detail::batch_args<std::size_t, std::remove_cvref_t<Args>...>::shuffled &&
             detail::batch_args<std::size_t, std::remove_cvref_t<Args>...>::bad == detail::batch_ok)
auto multibatch(std::size_t size, Args&&... args) {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
        auto refs = std::forward_as_tuple(std::forward<Args>(args)...);
        return Batches<std::remove_cvref_t<std::tuple_element_t<I, std::tuple<Args...>>>...>(
            size, true, std::get<I>(std::move(refs))...);
    }(std::make_index_sequence<sizeof...(Args) - 1>{});
}

// Anything that is not an array where one is expected (a size left out, a std::vector): E014.
template <class S, class... Args>
    requires(detail::batch_args<S, Args...>::bad != detail::batch_ok)
auto multibatch(const S&, const Args&...) {
    using A = detail::batch_args<S, Args...>;
    check::report<check::batch_argument<check::argument<A::bad>,
                                        check::given_type<check::name_t<typename A::bad_type>>>>();
    return check::never<typename A::meant_type>();
}
template <class S, class... Args>
    requires(sizeof...(Args) <= 2 && detail::batch_args<S, Args...>::bad != detail::batch_ok &&
             !detail::item_batch_call<S, Args...>)
auto minibatch(const S&, const Args&...) {
    using A = detail::batch_args<S, Args...>;
    check::report<check::batch_argument<check::argument<A::bad>,
                                        check::given_type<check::name_t<typename A::bad_type>>>>();
    return check::never<typename A::meant_type>();
}

// ---- Batches of items (documents) ------------------------------------------------------------

// A batch size: a number, or a Schedule whose next value (truncated, as Thinc's int(size)) is
// each batch's size. A schedule passed as a variable is drawn from where it is, so the next
// epoch's batches go on with it (as a Thinc generator given to a batcher); a temporary one
// is the batcher's own.
class BatchSize {
public:
    template <std::integral I>
    BatchSize(I n) : n_(n < 0 ? 0 : static_cast<std::size_t>(n)) {}  // NOLINT: minibatch(32, docs)
    BatchSize(Schedule& s) : shared_(&s) {}                                  // NOLINT
    BatchSize(Schedule&& s) : own_(std::move(s)), owned_(true) {}            // NOLINT
    // The next batch's size (a schedule's value below 1 or not finite is tenon-E135, naming `who`).
    std::size_t next(const char* who);
    // The value as a number (by words: a schedule's value is not truncated).
    double next_value(const char* who);

private:
    std::size_t n_ = 0;
    Schedule* shared_ = nullptr;
    Schedule own_{"", nullptr};
    bool owned_ = false;
};

namespace detail {
// The items of every batch, in order: batch b is order[ends[b - 1] .. ends[b]).
struct BatchPlan {
    std::vector<std::size_t> order;
    std::vector<std::size_t> ends;
};
// n items in batches of size.next() each (Thinc's ops.minibatch: every size drawn before
// the first batch; the last batch may be short), shuffled first when asked (global_rng()).
BatchPlan plan_batches(std::size_t n, BatchSize size, bool shuffled);
// spaCy's minibatch_by_words over the items' lengths (in order, or shuffled first): batches
// of about size words, up to (1 + tolerance) * size with the items that overflow carried
// into the next batch; an item longer than that alone is a batch by itself, or left out
// when discard_oversize.
BatchPlan plan_by_words(const std::vector<std::size_t>& lengths, BatchSize size, double tolerance,
                        bool discard_oversize, bool shuffled);
// An item's length in words: an array's rows, else its size().
template <class T>
std::size_t item_length(const T& item) {
    if constexpr (requires { item.shape(0); }) return item.shape(0);
    else return static_cast<std::size_t>(item.size());
}
}  // namespace detail

// The batches of a list of items: each a list of the same type holding copies of its items
// (made when the loop reaches it). The items must outlive the loop. size() is the number of
// batches; indices(b) the items of batch b.
template <class C>
class ItemBatches {
public:
    ItemBatches(const C& items, detail::BatchPlan plan) : items_(&items), plan_(std::move(plan)) {}
    // Items given as a temporary (minibatch(32, make_docs())) are moved in and kept.
    ItemBatches(C&& items, detail::BatchPlan plan)
        : owned_(std::make_shared<const C>(std::move(items))), items_(owned_.get()), plan_(std::move(plan)) {}
    std::size_t size() const noexcept { return plan_.ends.size(); }
    std::pair<const std::size_t*, std::size_t> indices(std::size_t b) const {
        const std::size_t lo = b ? plan_.ends[b - 1] : 0;
        return {plan_.order.data() + lo, plan_.ends[b] - lo};
    }
    C operator[](std::size_t b) const {
        const auto [idx, n] = indices(b);
        C out;
        out.reserve(n);
        for (std::size_t i = 0; i < n; ++i) out.push_back((*items_)[idx[i]]);
        return out;
    }

    class iterator {
    public:
        iterator(const ItemBatches* b, std::size_t i) : b_(b), i_(i) {}
        C operator*() const { return (*b_)[i_]; }
        iterator& operator++() {
            ++i_;
            return *this;
        }
        bool operator==(const iterator& o) const { return i_ == o.i_; }
        bool operator!=(const iterator& o) const { return i_ != o.i_; }

    private:
        const ItemBatches* b_;
        std::size_t i_;
    };
    iterator begin() const { return iterator(this, 0); }
    iterator end() const { return iterator(this, size()); }

private:
    std::shared_ptr<const C> owned_;  // the items, when given as a temporary
    const C* items_;
    detail::BatchPlan plan_;
};

// Thinc's minibatch over items: batches of `size` items (a Schedule: a size per batch).
template <class R, class C = std::remove_cvref_t<R>>
    requires detail::item_list<C>
ItemBatches<C> minibatch(BatchSize size, R&& items) {
    const std::size_t n = items.size();
    return ItemBatches<C>(std::forward<R>(items), detail::plan_batches(n, std::move(size), false));
}
template <class R, class C = std::remove_cvref_t<R>>
    requires detail::item_list<C>
ItemBatches<C> minibatch(BatchSize size, R&& items, Shuffle) {
    const std::size_t n = items.size();
    return ItemBatches<C>(std::forward<R>(items), detail::plan_batches(n, std::move(size), true));
}

// spaCy's minibatch_by_words: batches of about `size` words (an item's length: an array's
// rows, or get_length(item)), `tolerance` the fraction a batch may exceed it by.
template <class R, class F, class C = std::remove_cvref_t<R>>
    requires detail::item_list<C>
ItemBatches<C> minibatch_by_words(R&& items, BatchSize size, double tolerance, bool discard_oversize,
                                  F&& get_length, bool shuffled = false) {
    std::vector<std::size_t> lengths(items.size());
    for (std::size_t i = 0; i < lengths.size(); ++i) lengths[i] = static_cast<std::size_t>(get_length(items[i]));
    return ItemBatches<C>(std::forward<R>(items),
                          detail::plan_by_words(lengths, std::move(size), tolerance, discard_oversize, shuffled));
}
template <class R, class C = std::remove_cvref_t<R>>
    requires detail::item_list<C>
ItemBatches<C> minibatch_by_words(R&& items, BatchSize size, double tolerance = 0.2, bool discard_oversize = false) {
    return minibatch_by_words(std::forward<R>(items), std::move(size), tolerance, discard_oversize,
                              [](const typename C::value_type& x) { return detail::item_length(x); });
}
template <class R, class C = std::remove_cvref_t<R>>
    requires detail::item_list<C>
ItemBatches<C> minibatch_by_words(R&& items, BatchSize size, Shuffle, double tolerance = 0.2,
                                  bool discard_oversize = false) {
    return minibatch_by_words(std::forward<R>(items), std::move(size), tolerance, discard_oversize,
                              [](const typename C::value_type& x) { return detail::item_length(x); }, true);
}

}  // namespace tenon
