// uniqued(layer, column = 0): Ints2d -> Floats2d; runs the layer only on the rows whose key
// (the value in `column`) is seen first in the batch, and copies its output rows back to
// every row with that key: a cache local to each batch (thinc/layers/uniqued.py). The keys
// are taken in sorted order, as numpy.unique. Backprop sums the gradients of the rows that
// share a key before the layer's backprop, and gives each row its key's input gradient
// divided by the key's count, as Thinc. A batch of fewer than two values goes straight to
// the layer, as in Thinc.
//
// The layer must take a 2-d integer array (Ints2d or Keys2d: E050) and output Floats2d
// (E051). nO is the layer's (static where the layer's is).
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tenon/lower/lowered_as.hpp"
#include "tenon/model/diagnostics.hpp"
#include "tenon/model/layer.hpp"
#include "tenon/model/widths.hpp"

namespace tenon {

namespace check {
// E050: uniqued(layer) of a layer whose input is not a 2-d array of integer keys.
template <class Layer, class Expects, class Given>
struct uniqued_input {
    static_assert(always_false<Layer>,
                  "[tenon-E050] uniqued(layer, column): the layer's input must be a 2-d array of integer keys, "
                  "Ints2d or Keys2d, whose column holds the keys (expects_type<T> but given_type<U>: see the instantiation "
                  "line)");
};
// E051: uniqued(layer) of a layer whose output is not Floats2d (one row per input row).
template <class Layer, class Expects, class Given>
struct uniqued_output {
    static_assert(always_false<Layer>,
                  "[tenon-E051] uniqued(layer, column): the layer's output must be Floats2d, one row per input "
                  "row, for the rows of repeated keys to be copied (expects_type<T> but given_type<U>: see the "
                  "instantiation line)");
};
template <class L, class In = typename L::In, class Out = typename L::Out>
using uniqued_check = std::conditional_t<
    !(std::is_same_v<In, tenon::Ints2d> || std::is_same_v<In, tenon::Keys2d>),
    uniqued_input<model<L>, expects_type<Ints2d>, given_type<name_t<In>>>,
    std::conditional_t<!std::is_same_v<Out, tenon::Floats2d>,
                       uniqued_output<model<L>, expects_type<Floats2d>, given_type<name_t<Out>>>, ok>>;
}  // namespace check

template <Model L>
class Uniqued : public Layer<Uniqued<L>, typename L::In, typename L::Out> {
    static_assert(sizeof(check::uniqued_check<L>) > 0);  // E050, E051
    using Base = Layer<Uniqued<L>, typename L::In, typename L::Out>;
    friend Base;
    using Key = typename L::In::value_type;

public:
    using InView = typename Base::InView;  // public: wrappers (with_array ...) name L::InView
    using typename Base::In;
    static constexpr extent_t static_nO = widths::static_nO<L>();

    Uniqued(L layer, std::size_t column = 0)
        : Base("uniqued(" + layer.name() + ")", {{"nO", as_dim(static_nO)}, {"nI", dyn}}, {}), layer_(std::move(layer)) {
        this->set_attr("column", static_cast<std::int64_t>(column));
        if (layer_.is_initialized()) {  // an initialised layer is ready to use as it is
            sync_dims();
            this->mark_initialized();
        }
    }

    L& layer() noexcept { return layer_; }
    const L& layer() const noexcept { return layer_; }

    // lower(): over a sequence plan's ids, the table itself on every row. A table's row
    // depends on its own column only, so where uniqued keys the rows by that column the copies
    // are what the table gives each row (the rows' gradients are summed by the table's
    // scatter-add instead of before it: the same sums in another order). Any other layer, or
    // another key column, keeps the layers (plan_refusal).
    static constexpr lowering::OnRows lowered_as{};
    static constexpr bool plan_rows =
        requires { requires std::is_same_v<std::remove_cv_t<decltype(L::lowered_as)>, lowering::TableStage>; };
    static constexpr bool plan_pads = false;
    const char* plan_refusal() const {
        if constexpr (requires { layer_.column(); })
            if (layer_.column() == column()) return nullptr;
        return "a key column other than its table's";
    }
    std::size_t column() const { return static_cast<std::size_t>(this->template attr_as<std::int64_t>("column")); }
    void for_each_child(const std::function<void(Node&)>& f) override { f(layer_); }

    struct Backprop {
        typename L::Backprop inner;
        bool direct = true;             // the layer ran on the whole batch
        Array<std::uint32_t, dyn> inv;  // the unique row of each row (host: the dX loop reads it)
        Array<std::uint32_t, dyn> inv_b;  // inv in a device backend's memory (empty: inv itself)
        std::vector<std::size_t> counts;
        std::size_t nU = 0, width = 0;
        const Ops* ops = nullptr;  // the layer's backend: its scatter-add sums dY into dU
        In operator()(Floats2dCView dY) const {
            if (direct) return inner(dY);
            if (dY.shape(0) != inv.size() || dY.shape(1) != width)
                throw ShapeError("uniqued: backprop: expected a gradient of shape (" + std::to_string(inv.size()) +
                                     ", " + std::to_string(width) + ") like the output, but found (" +
                                     std::to_string(dY.shape(0)) + ", " + std::to_string(dY.shape(1)) + ")",
                                 "tenon-E191");
            Floats2d dU({nU, width});
            ops->scatter_add_rows(dU.data(), width, (inv_b.size() ? inv_b : inv).data(), inv.size(), 1, dY.data(),
                                  nullptr);
            const In dXu = inner(dU);
            const std::size_t cols = dXu.shape(1);
            In dX({inv.size(), cols});
            for (std::size_t i = 0; i < inv.size(); ++i)
                for (std::size_t j = 0; j < cols; ++j)
                    dX.data()[i * cols + j] =
                        static_cast<Key>(dXu.data()[inv[i] * cols + j] / static_cast<Key>(counts[inv[i]]));
            return dX;
        }
    };

private:
    void sync_dims() {
        if (layer_.has_dim("nO")) this->set_dim("nO", layer_.get_dim("nO"));
        if (layer_.has_dim("nI")) this->set_dim("nI", layer_.get_dim("nI"));
    }
    void init_impl(const std::remove_reference_t<InView>* X, const Floats2dCView* Y) {
        layer_.initialize_from(X, Y);  // on the whole sample, as Thinc
        sync_dims();
        this->mark_initialized();
    }

    // The unique keys of the batch: the first row with each key (keys in sorted order), the
    // unique row of each row, and the counts (numpy.unique with return_index/inverse/counts).
    struct Groups {
        std::vector<std::size_t> first, counts;
        Array<std::uint32_t, dyn> inv;
    };
    Groups group(InView X) const {
        const std::size_t rows = X.shape(0), cols = X.shape(1), c = column();
        if (c >= cols)
            throw ShapeError(this->name() + ": column " + std::to_string(c) + " holds the keys, but the input has " +
                                 std::to_string(cols) + " columns",
                             "tenon-E194");
        std::vector<std::size_t> order(rows);
        std::iota(order.begin(), order.end(), std::size_t{0});
        const auto key = [&](std::size_t r) { return X.data()[r * cols + c]; };
        std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return key(a) < key(b); });
        Groups g;
        g.inv = Array<std::uint32_t, dyn>({rows}, uninitialized, Memory::host);
        for (std::size_t k = 0; k < rows; ++k) {
            const std::size_t r = order[k];
            if (k == 0 || key(r) != key(order[k - 1])) {
                g.first.push_back(r);
                g.counts.push_back(0);
            }
            g.inv[r] = static_cast<std::uint32_t>(g.first.size() - 1);
            ++g.counts.back();
        }
        return g;
    }
    static In rows_of(InView X, const std::vector<std::size_t>& which) {
        const std::size_t cols = X.shape(1);
        In out({which.size(), cols}, uninitialized);
        for (std::size_t u = 0; u < which.size(); ++u)
            std::copy_n(X.data() + which[u] * cols, cols, out.data() + u * cols);
        return out;
    }
    // inv where the backend's gather and scatter-add read it: a copy in a device backend's
    // memory (host code reads inv too), nothing on the host (inv itself).
    Array<std::uint32_t, dyn> inv_for_backend(const Groups& g) const {
        const Memory m = this->ops().memory();
        return m == Memory::host ? Array<std::uint32_t, dyn>() : to_memory(g.inv, m);
    }
    // Row i of the output is the layer's output row inv[i] (the backend's gather of one row each).
    Floats2d spread(const Floats2d& Yu, const Groups& g, const Array<std::uint32_t, dyn>& inv_b) const {
        if (Yu.shape(0) != g.first.size())
            throw ShapeError(this->name() + ": the layer must give one output row per input row: it gave " +
                                 std::to_string(Yu.shape(0)) + " rows for " +
                                 std::to_string(g.first.size()) + " unique rows",
                             "tenon-E196");
        const std::size_t w = Yu.shape(1), rows = g.inv.size();
        Floats2d Y({rows, w}, uninitialized);
        this->ops().gather_add_rows(Yu.data(), w, (inv_b.size() ? inv_b : g.inv).data(), rows, 1, Y.data());
        return Y;
    }

    Floats2d predict_impl(InView X) const {
        if (X.size() < 2) return layer_.predict_inner(X);
        const Groups g = group(X);
        return spread(layer_.predict_inner(rows_of(X, g.first)), g, inv_for_backend(g));
    }
    std::pair<Floats2d, Backprop> forward_impl(InView X, bool is_train) {
        Backprop bp;
        if (X.size() < 2) {
            auto [Y, b] = layer_.update_inner(X, is_train);
            bp.inner = std::move(b);
            return {std::move(Y), std::move(bp)};
        }
        Groups g = group(X);
        auto [Yu, b] = layer_.update_inner(rows_of(X, g.first), is_train);
        bp.inv_b = inv_for_backend(g);
        Floats2d Y = spread(Yu, g, bp.inv_b);
        bp.inner = std::move(b);
        bp.direct = false;
        bp.nU = g.first.size();
        bp.width = Yu.shape(1);
        bp.ops = &this->ops();
        bp.inv = std::move(g.inv);
        bp.counts = std::move(g.counts);
        return {std::move(Y), std::move(bp)};
    }

    L layer_;
};

template <Model L>
auto uniqued(L&& layer, std::size_t column = 0) {
    using D = std::remove_cvref_t<L>;
    if constexpr (!std::is_same_v<check::uniqued_check<D>, check::ok>) {
        check::report<check::uniqued_check<D>>();  // E050, E051: said here, at the call
        return failed_model{};
    } else {
        return Uniqued<D>(std::forward<L>(layer), column);
    }
}

// With a failed model (its error is already said): a failed model (model/failed_model.hpp).
template <class... A>
    requires(any_failed_model<A...>)
failed_model uniqued(A&&...) noexcept {
    return {};
}

}  // namespace tenon
