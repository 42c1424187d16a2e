// SparseLinear<nO>({.length}): a linear layer over hashed bags of features
// (thinc/layers/sparselinear.pyx, spaCy's TextCatBOW engine). Input: SparseFeatures (Thinc's
// (keys, values, lengths)); output Floats2d (one row per entry of lengths, nO columns):
//   Y[b, c] = b[c] + sum over row b's features f of values[f] * (W[c, h0(f)] + W[c, h1(f)])
// with h_s(f) = MurmurHash3_x86_32(keys[f], seed s) % length (Thinc's SparseLinear.v2
// indexing, the default). W (Thinc's flat (nO * length,): class c's weights at
// [c * length, (c + 1) * length)) and b (nO) start at zero, as Thinc's. Backprop adds
// values[f] * dY[b, c] to W at the two places of every feature and only there (a scatter-add
// whose cost is that of the features, not of W), dY's column sums to b, and returns the
// gradient of the values (keys and lengths as given); params_only skips the latter.
//
// SparseLinear_v1 (or {.v1_indexing = true}): Thinc's SparseLinear.v1 indexing, kept for its
// models: h_s & (length - 1) and class c at W[h + c]. It is defective (thinc#752): every class
// reads the same few weights shifted by one, and only the first length + nO - 1 of the
// nO * length weights are ever used. Errors: tenon-E276 (length out of [1, 2^32]).
#pragma once
#include <cstddef>
#include <cstdint>
#include <utility>

#include "tenon/model/layer.hpp"
#include "tenon/types/sparse.hpp"
#include "tenon/util/murmurhash.hpp"

namespace tenon {

// Thinc's keyword arguments: SparseLinear<nO>({.length = 1 << 18}).
struct SparseLinearOptions {
    std::size_t nO = dyn;                      // for a dyn nO in the type (else from Y in initialize)
    std::size_t length = std::size_t{1} << 18;  // the hash table's size per class
    bool v1_indexing = false;                  // Thinc's SparseLinear.v1 (defective) indexing
};

namespace detail {
// length in [1, 2^32] (tenon-E276); sets the dims and the v1_indexing attribute.
void sparselinear_setup(Node& layer, const SparseLinearOptions& o);
// The `per`=2 weight indices of every feature (h0, h1), already reduced to [0, length).
void sparselinear_indices(const Keys1d& keys, std::size_t length, bool v1, std::uint32_t* idx) noexcept;
}  // namespace detail

template <extent_t NO = dyn>
class SparseLinear : public Layer<SparseLinear<NO>, SparseFeatures, Floats2d> {
    using Base = Layer<SparseLinear<NO>, SparseFeatures, Floats2d>;
    friend Base;
    static_assert(sizeof(check::width_check<NO, SparseLinear, check::nO>) > 0);  // E012

public:
    using InView = typename Base::InView;
    static constexpr extent_t static_nO = usable_width(NO);

    explicit SparseLinear(SparseLinearOptions o = {})
        : Base("sparse_linear", {{"nO", as_dim(NO)}, {"length", dyn}}, {"W", "b"}) {
        detail::sparselinear_setup(*this, o);
    }

    std::size_t length() const noexcept { return this->dim(1); }
    bool v1_indexing() const { return this->template attr_as<bool>("v1_indexing"); }

    struct Backprop {
        SparseLinear* layer = nullptr;
        SparseFeatures X;                  // the input (keys and lengths for dX, values)
        Array<std::uint32_t, dyn> idx;     // two weight indices per feature
        // The gradients of W and b, and the values' (keys and lengths as given).
        SparseFeatures operator()(Floats2dCView dY) const {
            Floats1d dv({X.features()}, uninitialized);
            run(dY, dv.data());
            return X.with_values(std::move(dv));
        }
        // The parameters' gradients alone.
        void params_only(Floats2dCView dY) const { run(dY, nullptr); }

    private:
        void run(Floats2dCView dY, float* dvalues) const {
            const std::size_t rows = X.size(), nO = layer->dim(0);
            detail::check_same_shape(*layer, dY, rows, nO);
            const Ops& ops = layer->ops();
            const std::size_t stride = layer->v1_indexing() ? 1 : layer->dim(1);
            ops.sparse_scatter_add(layer->grad_data(0), nO, stride, idx.data(), 2, X.values().data(),
                                   X.lengths().data(), rows, dY.data(), layer->param(0).value.data(), dvalues);
            ops.sum_rows_into(dY.data(), rows, nO, layer->grad_data(1));
        }
    };

private:
    void init_impl(const SparseFeatures*, const Floats2dCView* Y) {
        if (Y) this->resolve_dim(0, Y->shape(1));
        const std::size_t nO = this->require_dim(0), length = this->require_dim(1);
        this->allocate_param(0, {nO * length});  // zeros, as Thinc's
        this->allocate_param(1, {nO});
        this->mark_initialized();
    }

    Array<std::uint32_t, dyn> indices(const SparseFeatures& X) const {
        Array<std::uint32_t, dyn> idx({2 * X.features()}, uninitialized);
        detail::sparselinear_indices(X.keys(), this->dim(1), v1_indexing(), idx.data());
        return detail::in_memory(std::move(idx), this->ops().memory());  // (made on the host, read by the pass)
    }
    Floats2d run(const SparseFeatures& X, const Array<std::uint32_t, dyn>& idx) const {
        const std::size_t rows = X.size(), nO = this->dim(0);
        const Ops& ops = this->ops();
        Floats2d Y({rows, nO});  // zeros, then b, then the features (Thinc's order)
        ops.bias_activate(Activation::identity, Y.data(), this->param(1).value.data(), rows, nO, nullptr);
        const std::size_t stride = v1_indexing() ? 1 : this->dim(1);
        ops.sparse_gather_add(this->param(0).value.data(), nO, stride, idx.data(), 2, X.values().data(),
                              X.lengths().data(), rows, Y.data());
        return Y;
    }
    Floats2d predict_impl(const SparseFeatures& X) const { return run(X, indices(X)); }
    std::pair<Floats2d, Backprop> forward_impl(const SparseFeatures& X, bool) {
        Backprop bp{this, X, indices(X)};
        Floats2d Y = run(X, bp.idx);
        return {std::move(Y), std::move(bp)};
    }
};

// Thinc's SparseLinear.v1: the same layer with its v1 indexing (see above: defective, for old
// models only).
template <extent_t NO = dyn>
SparseLinear<NO> SparseLinear_v1(SparseLinearOptions o = {}) {
    o.v1_indexing = true;
    return SparseLinear<NO>(o);
}

}  // namespace tenon
