// Embed<nO, In>(nV, column, dropout): ids -> Floats2d, a plain lookup table
// (thinc/layers/embed.py): row i of the output is E[id_i]. E (nV, nO) starts uniform in
// [-0.1, 0.1) (Thinc's uniform_init); a dyn nO is taken from Y in initialize, as Thinc.
// Backprop adds each output row's gradient to its row of E; the ids get a zero gradient.
// An id outside [0, nV) is an error (tenon-E193): Thinc's numpy indexing raises IndexError
// for id >= nV, and reads E[nV + id] for a negative id, which tenon refuses.
// With `dropout`, training multiplies the output by one random mask over the columns, shared
// by every row (Thinc's get_dropout_mask((nO,))).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tenon/init/init.hpp"
#include "tenon/layers/detail/embed_ids.hpp"
#include "tenon/lower/lowered_as.hpp"
#include "tenon/model/layer.hpp"

namespace tenon {

// Thinc's keyword arguments, for the options form Embed<nO>(nV, {.column = 1, ...}).
struct EmbedOptions {
    std::size_t nO = dyn;     // for a dyn nO in the type (else from Y in initialize)
    std::size_t column = 0;   // the column of a 2-d input that holds the ids
    Init initializer = {};    // default: uniform_init (-0.1, 0.1)
    std::optional<double> dropout{};  // {}: a designated initializer may leave it out (-Wextra)
};

template <extent_t NO = dyn, class In = Ints2d>
class Embed : public Layer<Embed<NO, In>, In, Floats2d> {
    using Base = Layer<Embed<NO, In>, In, Floats2d>;
    friend Base;
    static_assert(sizeof(detail::embed_input_check<Embed, In>) > 0);          // E052
    static_assert(sizeof(check::width_check<NO, Embed, check::nO>) > 0);      // E012

public:
    static constexpr bool tenon_failed_layer = !detail::is_id_array<In>;  // (E052 said: no cascade)
    using InView = typename Base::InView;  // public: wrappers (with_array ...) name L::InView
    static constexpr extent_t static_nO = usable_width(NO);

    Embed(std::size_t nV, std::size_t column = 0, std::optional<double> dropout = {})
        : Embed(nV, EmbedOptions{dyn, column, {}, dropout}) {}
    Embed(std::size_t nV, EmbedOptions o)
        : Base("embed", {{"nO", as_dim(NO)}, {"nV", dyn}}, {{"E", {"nV", "nO"}}}),
          init_E_(o.initializer ? std::move(o.initializer) : Init(uniform_init)) {
        detail::check_table_args<In>(*this, "embed", nV, o.nO, o.column, o.dropout);
        detail::set_table_attrs(*this, o.column, o.dropout);
    }

    std::size_t column() const { return static_cast<std::size_t>(this->template attr_as<std::int64_t>("column")); }

    // lower(): a gather of one row per id (lower/lowered_as.hpp); the rows are this layer's
    // (with its range check, tenon-E193).
    static constexpr lowering::TableStage lowered_as{"embed", 1};
    static void table_keys(const Node* l, const std::int32_t* ids, std::size_t rows, std::size_t cols,
                           std::uint32_t* keys) {
        if constexpr (std::is_same_v<In, Ints2d>) {
            const auto k = static_cast<const Embed*>(l)->rows_of(Ints2dCView(ids, {rows, cols}));
            if (k.size()) std::memcpy(keys, k.data(), k.size() * sizeof(std::uint32_t));
        }
    }

    struct Backprop {
        Embed* layer = nullptr;
        Array<std::uint32_t, dyn> rows;   // the row of E of each output row
        Floats1d mask;                    // the dropout mask, or empty
        typename In::shape_type shape{};  // X's, for the (zero) gradient of the ids
        In operator()(Floats2dCView dY) const {
            const std::size_t n = rows.size(), nO = layer ? layer->dim(0) : 0;
            detail::check_table_grad("embed", layer, dY, n, nO);
            layer->ops().scatter_add_rows(layer->grad_data(0), nO, rows.data(), n, 1, dY.data(),
                                          mask.size() ? mask.data() : nullptr);
            return In(shape);
        }
    };

private:
    void init_impl(const std::remove_reference_t<InView>*, const Floats2dCView* Y) {
        if (Y) this->resolve_dim(0, Y->shape(1));
        const std::size_t nO = this->require_dim(0), nV = this->require_dim(1);
        detail::check_table_rows("embed", nV);
        this->allocate_param(0, {nV, nO});
        detail::run_init(init_E_, *this, "E");
        this->mark_initialized();
    }

    // (An array, not a vector: its memory comes from the thread's block cache.)
    Array<std::uint32_t, dyn> rows_of(InView X) const {
        const auto ids = detail::id_column(*this, X, column());
        const std::size_t n = ids.rows(), nV = this->dim(1);
        Array<std::uint32_t, dyn> rows({n}, uninitialized);
        for (std::size_t r = 0; r < n; ++r) {
            const auto id = ids.id(r);
            if constexpr (std::is_signed_v<decltype(id)>)
                if (id < 0)
                    throw Error(this->name() + ": id " + std::to_string(id) + " (" + detail::row_text(r) +
                                    ") is negative; ids must be in [0, nV) = [0, " + std::to_string(nV) + ")",
                                "tenon-E193");
            if (static_cast<std::uint64_t>(id) >= nV)
                throw Error(this->name() + ": id " + std::to_string(id) + " (" + detail::row_text(r) +
                                ") is out of range: the table has nV = " + std::to_string(nV) +
                                " rows, so ids must be in [0, " + std::to_string(nV) + ")",
                            "tenon-E193");
            rows[r] = static_cast<std::uint32_t>(id);  // < nV <= 2^32
        }
        return rows;
    }
    Floats2d gather(const Array<std::uint32_t, dyn>& rows) const {
        const std::size_t n = rows.size(), nO = this->dim(0);
        Floats2d Y({n, nO}, uninitialized);
        this->ops().gather_add_rows(this->param(0).value.data(), nO, rows.data(), n, 1, Y.data());
        return Y;
    }
    Floats2d predict_impl(InView X) const { return gather(detail::in_memory(rows_of(X), this->ops().memory())); }
    std::pair<Floats2d, Backprop> forward_impl(InView X, bool is_train) {
        Backprop bp;
        bp.layer = this;
        bp.shape = X.shape();
        bp.rows = detail::in_memory(rows_of(X), this->ops().memory());
        Floats2d Y = gather(bp.rows);
        bp.mask = detail::column_dropout_mask(*this, this->dim(0), is_train);
        detail::apply_column_mask(this->ops(), Y.data(), Y.shape(0), bp.mask);
        return {std::move(Y), std::move(bp)};
    }

    Init init_E_;
};

}  // namespace tenon
