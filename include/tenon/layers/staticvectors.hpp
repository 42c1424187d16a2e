// StaticVectors<nO, nM, In>(vectors, {.column, .dropout}): ids -> Floats2d through a fixed table
// of pretrained vectors and a learned projection (Thinc's StaticVectors as documented, spaCy's
// StaticVectors.v2 behaviour). The table V (nV, nM) is the user's: held read-only and shared
// (a std::shared_ptr<const Floats2d>: many models and threads use one big table without a
// copy), never trained, never given a gradient. W (nO, nM) starts glorot_uniform (Thinc's).
//   ids = column `column` of an Ints2d/Keys2d input, or the Ints1d/Keys1d itself;
//   an id >= nV reads row 0 (Thinc: vectors[ids * (ids < nV)]); a negative id is tenon-E280;
//   Y = V[ids] W^T; in training, times one dropout mask over the nO columns shared by the batch.
// Backprop: dW += (dY * mask)^T V[ids]; the ids get a zero gradient.
// nM comes from the table (a static nM of another width is tenon-E279), nO from the type,
// the options or Y. No table at initialize / predict: tenon-E278. A model file holds W and the
// dims, not the table (Thinc: the vectors are unserializable): after from_bytes / from_disk into
// a model made without one, set_vectors the same table again. Errors: tenon-E278 ... E281.
// In a sequence model over Ints2d ids it is a plan stage (V[ids] and the mask in the
// workspace); as a model's first layer on other ids, a "layer" stage (docs/lowering.md).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "tenon/init/init.hpp"
#include "tenon/layers/detail/embed_ids.hpp"
#include "tenon/lower/lowered_as.hpp"
#include "tenon/model/layer.hpp"

namespace tenon {

// Thinc's keyword arguments, for StaticVectors<nO>(vectors, {.column = 1, .dropout = 0.1}).
struct StaticVectorsOptions {
    std::size_t nO = dyn;             // for a dyn nO in the type (else from Y in initialize)
    std::size_t column = 0;           // the column of a 2-d input that holds the ids
    std::optional<double> dropout{};  // the rate of the per-column mask in training
    Init init_W = {};                 // default: glorot_uniform_init, as Thinc
};

// A table of vectors read from a file: a 2-d .npy (float32 or float64, C order) or a text file
// of one vector per line, numbers separated by whitespace (tenon-E283 when it cannot be read).
std::shared_ptr<const Floats2d> load_vectors(const std::string& path);

namespace detail {
// The table's checks (tenon-E281: no table rows, or more than 2^32; tenon-E279: width not nM).
void check_vectors(const Node& layer, const Floats2d* V, std::size_t nM);
[[noreturn]] void throw_vectors_unset(const Node& layer, const char* call);
[[noreturn]] void throw_negative_vector_id(const Node& layer, std::int64_t id, std::size_t row);
// The plan's stage over a sequence model's ids (lowered_as below): the same lookup, product
// and column mask as the layer's, V[ids] and the mask kept in the workspace. V: the table (null:
// unset, tenon-E278).
void static_vectors_stage_scratch(const Node* layer, bool train, std::size_t& per_row, std::size_t& fixed);
void static_vectors_stage_forward(Node& layer, const Floats2d* V, const lowering::SeqCall& c);
void static_vectors_stage_backward(Node* layer, const lowering::SeqCall& c);
// The table in a backend's memory: the user's own where it lives there, else a copy made on the
// first call and kept (VectorsCopy: shared by the layer's copies, remade for another table).
struct VectorsCopy;
std::shared_ptr<VectorsCopy> new_vectors_copy();
std::shared_ptr<const Floats2d> vectors_in(const Ops& ops, const std::shared_ptr<const Floats2d>& T, VectorsCopy& c);
}  // namespace detail

template <extent_t NO = dyn, extent_t NM = dyn, class In = Ints2d>
class StaticVectors : public Layer<StaticVectors<NO, NM, In>, In, Floats2d> {
    using Base = Layer<StaticVectors<NO, NM, In>, In, Floats2d>;
    friend Base;
    static_assert(sizeof(detail::embed_input_check<StaticVectors, In>) > 0);  // E052
    static_assert(sizeof(check::width_check<NO, StaticVectors, check::nO>) > 0);  // E012
    static_assert(sizeof(check::width_check<NM, StaticVectors, check::nI>) > 0);  // E012

public:
    static constexpr bool tenon_failed_layer = !detail::is_id_array<In>;  // (E052 said: no cascade)
    using InView = typename Base::InView;
    static constexpr extent_t static_nO = usable_width(NO);

    explicit StaticVectors(std::shared_ptr<const Floats2d> vectors, StaticVectorsOptions o = {})
        : Base("static_vectors", {{"nO", as_dim(NO)}, {"nM", as_dim(NM)}}, {{"W", {"nO", "nM"}}}),
          init_W_(o.init_W ? std::move(o.init_W) : Init(glorot_uniform_init)) {
        if (o.nO != dyn) this->set_dim("nO", o.nO);
        detail::check_column<In>(this->name(), o.column);
        detail::check_dropout_rate(this->name(), o.dropout);
        detail::set_table_attrs(*this, o.column, o.dropout);
        if (vectors) set_vectors(std::move(vectors));
    }
    // A table given by value: moved into a shared one.
    explicit StaticVectors(Floats2d vectors, StaticVectorsOptions o = {})
        : StaticVectors(std::make_shared<const Floats2d>(std::move(vectors)), std::move(o)) {}
    // No table yet (a model to load from a file): set_vectors before initialize / predict.
    explicit StaticVectors(StaticVectorsOptions o = {}) : StaticVectors(std::shared_ptr<const Floats2d>(), std::move(o)) {}

    // The table (nullptr while unset). Setting one checks it against nM when nM is known
    // (tenon-E279) and fixes nM when not; the table must have rows (tenon-E281).
    const std::shared_ptr<const Floats2d>& vectors() const noexcept { return vectors_; }

    // lower(): in a sequence model over Ints2d ids, a stage that reads them (lowered_as.hpp).
    static void stage_forward(Node* l, const lowering::SeqCall& c) {
        const auto T = static_cast<StaticVectors*>(l)->vectors_in(*c.ops);
        detail::static_vectors_stage_forward(*l, T.get(), c);
    }
    static constexpr lowering::SeqLayerStage lowered_as{"static_vectors", &detail::static_vectors_stage_scratch,
                                                        &stage_forward, &detail::static_vectors_stage_backward, true};
    void set_vectors(std::shared_ptr<const Floats2d> vectors) {
        detail::check_vectors(*this, vectors.get(), this->dim(1));
        if (this->dim(1) == dyn) this->set_dim("nM", vectors->shape(1));
        vectors_ = std::move(vectors);
    }
    std::size_t column() const { return static_cast<std::size_t>(this->template attr_as<std::int64_t>("column")); }
    // The table in ops' memory (a device backend reads a copy of a host table, made once).
    std::shared_ptr<const Floats2d> vectors_in(const Ops& ops) const {
        return detail::vectors_in(ops, vectors_, *table_copy_);
    }

    struct Backprop {
        StaticVectors* layer = nullptr;
        Floats2d V;                       // V[ids] (rows, nM), for dW
        Floats1d mask;                    // the dropout mask, or empty
        typename In::shape_type shape{};  // X's, for the (zero) gradient of the ids
        In operator()(Floats2dCView dY) const {
            const std::size_t rows = V.shape(0), nO = layer->dim(0), nM = V.shape(1);
            detail::check_same_shape(*layer, dY, rows, nO);
            if (rows == 0) return In(shape);
            const Ops& ops = layer->ops();
            const float* d = dY.data();
            Floats2d masked;
            if (mask.size()) {
                masked = Floats2d(dY);
                detail::apply_column_mask(ops, masked.data(), rows, mask);
                d = masked.data();
            }
            ops.gemm(true, false, nO, nM, rows, 1.0f, d, nO, V.data(), nM, 1.0f, layer->grad_data(0), nM);
            return In(shape);
        }
    };

private:
    void init_impl(const std::remove_reference_t<InView>*, const Floats2dCView* Y) {
        if (!vectors_) detail::throw_vectors_unset(*this, "initialize");
        if (Y) this->resolve_dim(0, Y->shape(1));
        const std::size_t nO = this->require_dim(0), nM = this->require_dim(1);
        this->allocate_param(0, {nO, nM});
        detail::run_init(init_W_, *this, "W");
        this->mark_initialized();
    }

    // V[ids] (rows, nM): one table row per id, row 0 for an id >= nV.
    Floats2d lookup(InView X) const {
        if (!vectors_) detail::throw_vectors_unset(*this, "predict");
        const auto table = vectors_in(this->ops());
        const Floats2d& T = *table;
        const std::size_t nV = T.shape(0), nM = this->dim(1);
        if (T.shape(1) != nM) detail::check_vectors(*this, &T, nM);  // (a file of another nM was loaded)
        const auto ids = detail::id_column(*this, X, column());
        const std::size_t n = ids.rows();
        Array<std::uint32_t, dyn> rows({n}, uninitialized);
        for (std::size_t r = 0; r < n; ++r) {
            const auto id = ids.id(r);
            if constexpr (std::is_signed_v<decltype(id)>)
                if (id < 0) detail::throw_negative_vector_id(*this, id, r);
            rows[r] = static_cast<std::uint64_t>(id) < nV ? static_cast<std::uint32_t>(id) : 0u;
        }
        Floats2d V({n, nM}, uninitialized);
        const auto on_backend = detail::in_memory(std::move(rows), this->ops().memory());  // (read by the pass)
        this->ops().gather_add_rows(T.data(), nM, on_backend.data(), n, 1, V.data());
        return V;
    }
    Floats2d project(const Floats2d& V) const {
        const std::size_t rows = V.shape(0), nO = this->dim(0), nM = V.shape(1);
        Floats2d Y({rows, nO}, uninitialized);
        if (rows) this->ops().gemm(false, true, rows, nO, nM, 1.0f, V.data(), nM, this->param(0).value.data(), nM, 0.0f, Y.data(), nO);
        return Y;
    }
    Floats2d predict_impl(InView X) const { return project(lookup(X)); }
    std::pair<Floats2d, Backprop> forward_impl(InView X, bool is_train) {
        Backprop bp;
        bp.layer = this;
        bp.shape = X.shape();
        bp.V = lookup(X);
        Floats2d Y = project(bp.V);
        if (Y.shape(0)) {
            bp.mask = detail::column_dropout_mask(*this, this->dim(0), is_train);
            detail::apply_column_mask(this->ops(), Y.data(), Y.shape(0), bp.mask);
        }
        return {std::move(Y), std::move(bp)};
    }

    std::shared_ptr<const Floats2d> vectors_;
    std::shared_ptr<detail::VectorsCopy> table_copy_ = detail::new_vectors_copy();
    Init init_W_;
};

}  // namespace tenon
