// LSTM<nO, nI>({.bi, .depth, .dropout}): Thinc's native LSTM (thinc/layers/lstm.py), Padded ->
// Padded. `depth` stacked layers, each one LSTM per direction (two with bi: left to right and
// right to left, their hiddens side by side, so nO = dirs * nH). BiLSTM<nO, nI>(...) is the
// same layer with bi set (and nO checked even at compile time when static).
//
// The parameters are Thinc's, value for value, so a Thinc model's weights load as they are:
//   "LSTM" (flat): for each layer, for each direction: Wx (4 nH, nI_layer), bx (4 nH),
//          Wh (4 nH, nH), bh (4 nH); the gates in blocks of nH in the order forget, input,
//          output, candidate; nI_layer is nI for the first layer and dirs * nH after it.
//          The gates' bias is bx + bh.
//   "HC0" (2, depth, dirs, nH): the initial hidden (HC0[0]) and cell (HC0[1]) of each
//          layer and direction, zeros at first, learned like any parameter.
// Dropout (training only) is over the *weights* (Thinc's: one mask over "LSTM" per call,
// 0 or 1 / (1 - rate)), not over the activations.
//
// Where Thinc 8.1 is wrong (docs/layers.md, "LSTM and BiLSTM"), tenon is not: Thinc's backprop
// returns wrong input and weight gradients (it never fills the gates' gradient it multiplies),
// and its forward uses HC0[0] as the initial cell and HC0[1] as the initial hidden, the other
// way round from its own names. The oracle compares the forward with Thinc (HC0 swapped on
// Thinc's side) and the gradients with PyTorch's nn.LSTM on the same weights.
//
// The work is width-independent and compiled once (src/lstm.cpp): the input's rows, step by
// step, through the layer's backend (a product per direction over all rows, a product and
// Ops::lstm_cell_forward per step; fn::lstm_cell_one is the math). In a plan (a sequence model
// with it under with_padded, or between list2padded and padded2list) it is a "seq" stage: the
// same functions over the sequences' rows, its tapes carved from the plan's workspace, so a
// warm call allocates nothing (docs/lowering.md, "Sequence models"). Errors: tenon-E285 (nO
// not a multiple of the directions, depth 0), tenon-E286 (an "LSTM" parameter of the wrong
// size), tenon-E101 (input width), tenon-E111 (gradient shape).
#pragma once
#include <cstddef>
#include <memory>
#include <utility>

#include "tenon/init/init.hpp"
#include "tenon/lower/lowered_as.hpp"
#include "tenon/model/layer.hpp"
#include "tenon/types/padded.hpp"

namespace tenon {

// Thinc's keyword arguments, in its order.
struct LSTMOptions {
    bool bi = false;
    std::size_t depth = 1;
    double dropout = 0.0;
    Init init_W = {};  // empty: glorot_uniform_init, per gate block (nH, nI_layer)
    Init init_b = {};  // empty: zero_init
};

namespace detail {
struct LstmDims {
    std::size_t nI, nH, depth, dirs;
};
struct LstmTape;  // what one forward call keeps for its backprop (src/lstm.cpp)
// What a call reads of the layer: its backend, name, dims, weights ("LSTM", P values), HC0
// and dropout rate.
struct LstmRun {
    const Ops* ops;
    const std::string* name;
    LstmDims d;
    const float* W;
    std::size_t P;
    const float* HC0;
    double rate;
};
// The size of the flat "LSTM" parameter (Thinc's).
std::size_t lstm_param_size(const LstmDims& d);
// Checks the options (tenon-E285 for depth 0, E112 for the rate) and nO against the directions.
void lstm_check_options(const LSTMOptions& o, std::size_t nO);
void lstm_check_width(const std::string& name, std::size_t nO, std::size_t dirs);
// Fills the flat parameter, gate block by gate block as Thinc does.
void lstm_fill(const LstmDims& d, float* W, const Init& init_W, const Init& init_b);
// Forward over a Padded (the tape only when `tape` is not null); backward adds to the
// parameters' gradients (gW: P values, gHC0) and returns dX.
Padded lstm_forward(const LstmRun& r, const Padded& X, bool is_train, std::shared_ptr<LstmTape>* tape);
Padded lstm_backward(const LstmRun& r, float* gW, float* gHC0, const LstmTape& tape, const Padded& dY);
// The plan's stage over the sequences' rows (lowered_as below): the same work, every array
// in the workspace.
void lstm_stage_scratch(const Node* layer, bool train, std::size_t& per_row, std::size_t& fixed);
void lstm_stage_forward(Node* layer, const lowering::SeqCall& c);
void lstm_stage_backward(Node* layer, const lowering::SeqCall& c);
}  // namespace detail

template <extent_t NO = dyn, extent_t NI = dyn>
class LSTM : public Layer<LSTM<NO, NI>, Padded, Padded> {
    using Base = Layer<LSTM<NO, NI>, Padded, Padded>;
    friend Base;
    static_assert(sizeof(check::width_check<NO, LSTM, check::nO>) > 0);  // E012
    static_assert(sizeof(check::width_check<NI, LSTM, check::nI>) > 0);

public:
    static constexpr extent_t static_nO = NO;
    static constexpr extent_t static_nI = NI;
    // lower(): a stage over the sequences' rows (under with_padded, or between list2padded
    // and padded2list), its tapes in the plan's workspace.
    static constexpr lowering::SeqLayerStage lowered_as{"lstm", &detail::lstm_stage_scratch,
                                                        &detail::lstm_stage_forward, &detail::lstm_stage_backward};

    // Thinc's positional widths (LSTM(64, 32)): tenon-E056, the one error (the layer is made
    // without them, so that the rest of the program adds none).
    explicit LSTM(check::thinc_width, check::thinc_width = check::thinc_width(0)) : LSTM() {
        static_assert(sizeof(check::widths_as_arguments<LSTM>) > 0);
    }
    LSTM() : LSTM(LSTMOptions{}) {}
    // The same layer with a static nI (a chain, clone or bidirectional after a layer of static
    // width rebinds a dyn nI), so the width keeps flowing: `Relu<3>() >> ... >>
    // clone(bidirectional(LSTM<4>()), 2)` is E016 where the chain is made, not at initialize.
    template <extent_t N2>
    using with_nI = LSTM<NO, N2>;
    template <extent_t N2>
        requires(NI != N2)
    explicit LSTM(LSTM<NO, N2>&& o)
        : Base(static_cast<Node&&>(o)), init_W_(std::move(o.init_W_)), init_b_(std::move(o.init_b_)) {
        this->fix_dim(1, as_dim(NI));
    }
    explicit LSTM(LSTMOptions o, std::size_t nO = dyn, std::size_t nI = dyn)
        : Base("lstm", {{"nO", as_dim(NO)}, {"nI", as_dim(NI)}, {"depth", o.depth}, {"dirs", o.bi ? 2u : 1u}}, {"LSTM", "HC0"}),
          init_W_(std::move(o.init_W)), init_b_(std::move(o.init_b)) {
        detail::lstm_check_options(o, NO != dyn ? as_dim(NO) : nO);
        if (nO != dyn) this->set_dim("nO", nO);
        if (nI != dyn) this->set_dim("nI", nI);
        this->set_attr("dropout_rate", o.dropout);
    }

    struct Backprop {
        LSTM* layer = nullptr;
        std::shared_ptr<detail::LstmTape> tape;
        Padded operator()(const Padded& dY) const {
            return detail::lstm_backward(layer->run(), layer->grad_data(0), layer->grad_data(1), *tape, dY);
        }
    };

private:
    detail::LstmRun run() const {
        const std::size_t nO = this->require_dim(0), dirs = this->dim(3);
        return {&this->ops(), &this->name(), {this->require_dim(1), nO / dirs, this->dim(2), dirs},
                this->param(0).value.data(), this->param(0).value.size(), this->param(1).value.data(),
                this->template attr_as<double>("dropout_rate")};
    }
    void init_impl(const Padded* X, const Padded* Y) {
        if (X) this->resolve_dim(1, X->data().shape(2));
        if (Y) this->resolve_dim(0, Y->data().shape(2));
        const std::size_t nO = this->require_dim(0), nI = this->require_dim(1), dirs = this->dim(3);
        detail::lstm_check_width(this->name(), nO, dirs);
        const detail::LstmDims d{nI, nO / dirs, this->dim(2), dirs};
        this->allocate_param(0, {detail::lstm_param_size(d)});
        this->allocate_param(1, {2, d.depth, d.dirs, d.nH});  // zeros
        detail::init_on_host(this->param(0).value, [&](float* W) { detail::lstm_fill(d, W, init_W_, init_b_); });
        this->mark_initialized();
    }
    Padded predict_impl(const Padded& X) const { return detail::lstm_forward(run(), X, false, nullptr); }
    std::pair<Padded, Backprop> forward_impl(const Padded& X, bool is_train) {
        Backprop bp{this, nullptr};
        Padded Y = detail::lstm_forward(run(), X, is_train, &bp.tape);
        return {std::move(Y), std::move(bp)};
    }

    Init init_W_, init_b_;
    template <extent_t, extent_t>
    friend class LSTM;
};

// The bidirectional LSTM: LSTM with bi set; a static nO must be even (nH = nO / 2 per direction).
template <extent_t NO = dyn, extent_t NI = dyn>
LSTM<NO, NI> BiLSTM(LSTMOptions o = {}, std::size_t nO = dyn, std::size_t nI = dyn) {
    static_assert(NO == dyn || NO % 2 == 0,
                  "[tenon-E287] BiLSTM<nO>: nO is the two directions' hiddens side by side, so it must be even");
    o.bi = true;
    return LSTM<NO, NI>(std::move(o), nO, nI);
}
// Thinc's positional widths (BiLSTM(64, 32)): tenon-E056, as LSTM's.
template <extent_t NO = dyn, extent_t NI = dyn>
LSTM<NO, NI> BiLSTM(check::thinc_width, check::thinc_width = check::thinc_width(0)) {
    static_assert(sizeof(check::widths_as_arguments<LSTM<NO, NI>>) > 0);
    return BiLSTM<NO, NI>();
}

}  // namespace tenon
