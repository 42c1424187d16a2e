// expand_window(window_size = 1): each row replaced by the concatenation of the
// window_size rows before it, itself and the window_size rows after it (zeros beyond the
// ends), so a (rows, nI) input gives (rows, (2 * window_size + 1) * nI): one step of a
// convolution (thinc/layers/expand_window.py, NumpyOps.seq2col / backprop_seq2col).
// Floats2d -> Floats2d treats the whole array as one sequence; Ragged -> Ragged keeps every
// window inside its own sequence (seq2col with lengths).
//
//   expand_window(w)             ExpandWindow<Floats2d>, the window a run-time value
//   expand_window<Ragged>(w)     ExpandWindow<Ragged>
//   expand_window<W>()           ExpandWindow<Floats2d, W>: the window in the type, so a
//   expand_window<W, Ragged>()   static nI gives a static nO = (2W + 1) nI that chain checks
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>

#include "tenon/model/diagnostics.hpp"
#include "tenon/lower/lowered_as.hpp"
#include "tenon/model/layer.hpp"
#include "tenon/types/ragged.hpp"

namespace tenon {

namespace check {
// E053: expand_window over another data type than Floats2d or Ragged.
template <class Given>
struct expand_window_type {
    static_assert(always_false<Given>,
                  "[tenon-E053] expand_window<T>(window_size): T must be Floats2d or Ragged (given_type<T>: see the "
                  "instantiation line)");
};
template <class T>
using expand_window_check = std::conditional_t<std::is_same_v<T, tenon::Floats2d> || std::is_same_v<T, tenon::Ragged>, ok,
                                               expand_window_type<given_type<name_t<T>>>>;
}  // namespace check

template <class T = Floats2d, extent_t W = dyn, extent_t NI = dyn>
class ExpandWindow : public Layer<ExpandWindow<T, W, NI>, T, T> {
    using Base = Layer<ExpandWindow<T, W, NI>, T, T>;
    friend Base;
    static_assert(sizeof(check::expand_window_check<T>) > 0);  // E053
    static_assert(sizeof(check::width_check<NI, ExpandWindow, check::nI>) > 0);  // E012

public:
    using InView = typename Base::InView;  // public: wrappers (with_array ...) name L::InView

private:
    using InPtr = const std::remove_reference_t<InView>*;

public:
    static constexpr extent_t static_nI = usable_width(NI);
    static constexpr extent_t static_nO = W == dyn || static_nI == dyn ? dyn : (2 * W + 1) * static_nI;
    // Chain's width propagation: the output width, given the input's.
    static constexpr extent_t nO_per_nI = W == dyn ? 0 : 2 * W + 1;

    // The same layer with a static nI (chain's width propagation), where the window is static
    // too: then its output width is static as well.
    template <extent_t N2>
        requires(W != dyn)
    using with_nI = ExpandWindow<T, W, N2>;
    template <extent_t N2>
        requires(NI != N2)
    explicit ExpandWindow(ExpandWindow<T, W, N2>&& o) : Base(static_cast<Node&&>(o)), window_(o.window()) {
        this->fix_dim(1, NI);
        this->fix_dim(0, static_nO);
    }

    explicit ExpandWindow(std::size_t window_size = W == dyn ? 1 : as_dim(W))
        : Base("expand_window", {{"nO", as_dim(static_nO)}, {"nI", as_dim(static_nI)}}, {}), window_(window_size) {
        if (W != dyn && window_size != as_dim(W))
            throw Error("expand_window: the window size is " + std::to_string(W) + " in the type but " +
                            std::to_string(window_size) + " was given",
                        "tenon-E195");
        // (A window past 2^30 rows each side is no sequence's; (2w + 1) nI would wrap.)
        if (window_size > (std::size_t(1) << 30))
            throw Error("expand_window: the window size " + std::to_string(window_size) +
                            " is too large: at most 2^30 rows on each side",
                        "tenon-E195");
        this->set_fixed_attr("window_size", static_cast<std::int64_t>(window_size));
        this->mark_initialized();  // no parameters; initialize only infers nI and nO
    }

    std::size_t window() const noexcept { return window_; }
    // lower(): a window stage (lower/lowered_as.hpp), Ops::seq2col as here.
    static constexpr lowering::WindowStage lowered_as{};

    struct Backprop {
        const Ops* ops = nullptr;
        std::size_t nW = 0, nI = dyn;  // dyn: a default Backprop (no forward ran)
        Ints1d lengths;                // the sequences (one of all the rows for Floats2d)
        std::size_t rows = 0;
        T operator()(InView dY) const {
            const std::size_t nO = nI == dyn ? dyn : (2 * nW + 1) * nI;
            const Floats2dCView d = data_of(dY);
            bool same_lengths = true;
            if constexpr (std::is_same_v<T, Ragged>)
                same_lengths = dY.lengths().size() == lengths.size() &&
                               std::equal(lengths.begin(), lengths.end(), dY.lengths().begin());
            if (nI == dyn || d.shape(0) != rows || d.shape(1) != nO || !same_lengths)
                throw ShapeError("expand_window: backprop: expected a gradient of shape (" + std::to_string(rows) +
                                     ", " + detail::dim_str(nO) + ")" +
                                     (std::is_same_v<T, Ragged> ? " with the lengths of the output" : "") +
                                     " like the output, but found (" + std::to_string(d.shape(0)) + ", " +
                                     std::to_string(d.shape(1)) + ")" + (same_lengths ? "" : " with other lengths"),
                                 "tenon-E191");
            Floats2d dX({rows, nI});
            ops->backprop_seq2col(d.data(), lengths.data(), lengths.size(), nW, nI, dX.data());
            if constexpr (std::is_same_v<T, Ragged>) return Ragged(std::move(dX), lengths); else return dX;
        }
    };

private:
    template <class, extent_t, extent_t>
    friend class ExpandWindow;

    static Floats2dCView data_of(InView X) {
        if constexpr (std::is_same_v<T, Ragged>) return X.data(); else return X;
    }
    std::size_t nF() const noexcept { return 2 * window_ + 1; }

    void init_impl(InPtr X, InPtr Y) {
        if (X) this->resolve_dim(1, data_of(*X).shape(1));
        if (Y) {
            const std::size_t nO = data_of(*Y).shape(1);
            if (nO % nF())
                throw ShapeError("expand_window: initialize: the sample Y's width " + std::to_string(nO) +
                                     " is not a multiple of 2 * window_size + 1 = " + std::to_string(nF()),
                                 "tenon-E192");
            this->resolve_dim(1, nO / nF());
        }
        // Without a sample, a width given to this layer (by the model around it, or set_dim)
        // gives the other: nO = (2 * window_size + 1) * nI.
        if (!this->has_dim("nI") && this->has_dim("nO")) {
            const std::size_t nO = this->get_dim("nO");
            if (nO % nF())
                throw ShapeError("expand_window: initialize: nO = " + std::to_string(nO) +
                                     " is not a multiple of 2 * window_size + 1 = " + std::to_string(nF()),
                                 "tenon-E192");
            this->resolve_dim(1, nO / nF());
        }
        if (this->has_dim("nI")) {
            std::size_t nO = 0;
            if (__builtin_mul_overflow(nF(), this->get_dim("nI"), &nO) || nO > (std::size_t(1) << 48))
                throw ShapeError("expand_window: initialize: (2 * window_size + 1) * nI = " + std::to_string(nF()) +
                                     " * " + std::to_string(this->get_dim("nI")) + " is too wide an output",
                                 "tenon-E192");
            this->resolve_dim(0, nO);
        }
        this->mark_initialized();
    }

    T run(InView X, Ints1d* keep_lengths) const {
        const Floats2dCView x = data_of(X);
        const std::size_t rows = x.shape(0), nI = x.shape(1);
        if (this->has_dim("nI") && this->get_dim("nI") != nI)
            detail::throw_width(this->name(), "input", this->get_dim("nI"), nI, "tenon-E192");
        Ints1d all({1}, {static_cast<std::int32_t>(rows)});
        const Ints1d* lengths = &all;
        if constexpr (std::is_same_v<T, Ragged>) lengths = &X.lengths();
        Floats2d Y({rows, nF() * nI}, uninitialized);  // (every value written)
        this->ops().seq2col(x.data(), lengths->data(), lengths->size(), window_, nI, Y.data());
        if (keep_lengths) *keep_lengths = *lengths;
        if constexpr (std::is_same_v<T, Ragged>) return Ragged(std::move(Y), X.lengths()); else return Y;
    }
    T predict_impl(InView X) const { return run(X, nullptr); }
    std::pair<T, Backprop> forward_impl(InView X, bool) {
        Backprop bp;
        T Y = run(X, &bp.lengths);
        bp.ops = &this->ops();
        bp.nW = window_;
        bp.nI = data_of(X).shape(1);
        bp.rows = data_of(X).shape(0);
        return {std::move(Y), std::move(bp)};
    }

    std::size_t window_;
};

// With a T other than Floats2d or Ragged: E053, and a failed_model (model/failed_model.hpp),
// so that the program's uses of the model add no errors.
template <class T = Floats2d>
auto expand_window(std::size_t window_size = 1) {
    if constexpr (!std::is_same_v<check::expand_window_check<T>, check::ok>) {
        check::report<check::expand_window_check<T>>();  // E053
        return failed_model{};
    } else {
        return ExpandWindow<T>(window_size);
    }
}
template <extent_t W, class T = Floats2d>
auto expand_window() {
    if constexpr (!std::is_same_v<check::expand_window_check<T>, check::ok>) {
        check::report<check::expand_window_check<T>>();  // E053
        return failed_model{};
    } else {
        return ExpandWindow<T, W>(W);
    }
}

}  // namespace tenon
