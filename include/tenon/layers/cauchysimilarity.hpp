// CauchySimilarity<nI>: std::pair<Floats2d, Floats2d> -> Floats1d, the Cauchy similarity of
// Chen (2013) per row (thinc/layers/cauchysimilarity.py), for siamese networks:
//   total_i = sum_j W_j (X1_ij - X2_ij)^2,  sim_i = 1 / (1 + total_i)
// W (nI) starts at 1. dims nI (static or dyn) and nO = 1. Run-time errors: tenon-E165.
// The math is fn::cauchy_row & co. (backend/functors.hpp), run by the model's backend.
#pragma once
#include <cstddef>
#include <string>
#include <utility>

#include "tenon/backend/ops.hpp"
#include "tenon/combinators/detail/data_ops.hpp"
#include "tenon/model/layer.hpp"

namespace tenon {

template <extent_t NI = dyn>
class CauchySimilarity : public Layer<CauchySimilarity<NI>, std::pair<Floats2d, Floats2d>, Floats1d> {
    using Base = Layer<CauchySimilarity<NI>, std::pair<Floats2d, Floats2d>, Floats1d>;
    friend Base;
    static_assert(sizeof(check::width_check<NI, CauchySimilarity, check::nI>) > 0);  // E012

public:
    using typename Base::In;
    using typename Base::InView;
    static constexpr extent_t static_nI = usable_width(NI);
    static constexpr extent_t static_nO = 1;

    explicit CauchySimilarity(std::size_t nI = dyn) : Base("cauchy_similarity", {{"nI", as_dim(NI)}, {"nO", 1}}, {{"W", {"nI"}}}) {
        if (nI != dyn) this->set_dim("nI", nI);
    }

    struct Backprop {
        CauchySimilarity* model = nullptr;
        Floats2d diff;   // X1 - X2
        Floats1d total;  // sum_j W_j diff_ij^2
        In operator()(Floats1dCView d_sim) const {
            const std::size_t rows = diff.shape(0), n = diff.shape(1);
            if (d_sim.shape(0) != rows)
                throw ShapeError("cauchy_similarity: backprop: expected a gradient of shape (" + std::to_string(rows) +
                                     ") like the output, but found (" + std::to_string(d_sim.shape(0)) + ")",
                                 "tenon-E165");
            In dX{Floats2d({rows, n}, uninitialized), Floats2d({rows, n}, uninitialized)};
            model->ops().cauchy_similarity_backward(d_sim.data(), diff.data(), total.data(),
                                                    model->param(0).value.data(), rows, n, dX.first.data(),
                                                    dX.second.data(), model->grad_data(0));
            return dX;
        }
    };

private:
    void check_inputs(const In& X) const {
        if (X.first.shape() != X.second.shape())
            throw ShapeError("cauchy_similarity: the two inputs must have the same shape, but found " +
                                 detail::layout_str(X.first) + " and " + detail::layout_str(X.second),
                             "tenon-E165");
        detail::check_width(*this, X.first, this->dim(0));
    }
    void init_impl(const In* X, const Floats1dCView*) {
        if (X) this->resolve_dim(0, X->first.shape(1));
        const std::size_t nI = this->require_dim(0);
        this->allocate_param(0, {nI});
        this->param(0).value.fill(1.0f);  // Thinc: W = 1 (in the parameter's memory)
        this->mark_initialized();
    }
    // The similarities of X's rows (the backend's, fn::cauchy_row), keeping diff and total
    // for the backward pass when asked.
    Floats1d similarity(const In& X, Floats2d* diff, Floats1d* total) const {
        check_inputs(X);
        const std::size_t rows = X.first.shape(0), n = X.first.shape(1);
        if (diff) *diff = Floats2d({rows, n}, uninitialized);
        if (total) *total = Floats1d({rows}, uninitialized);
        Floats1d sim({rows}, uninitialized);
        this->ops().cauchy_similarity(X.first.data(), X.second.data(), this->param(0).value.data(), rows, n,
                                      diff ? diff->data() : nullptr, total ? total->data() : nullptr, sim.data());
        return sim;
    }
    Floats1d predict_impl(const In& X) const { return similarity(X, nullptr, nullptr); }
    std::pair<Floats1d, Backprop> forward_impl(const In& X, bool) {
        Backprop bp{this, {}, {}};
        Floats1d sim = similarity(X, &bp.diff, &bp.total);
        return {std::move(sim), std::move(bp)};
    }
};

}  // namespace tenon
