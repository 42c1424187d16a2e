// Compile-time tests: if this file compiles, the signatures, the static width propagation of
// chain and the model concept are as documented (docs/lifecycle.md, docs/diagnostics.md).
// main() then builds and runs a named model once, so the file also runs as a test.
#include <tenon/tenon.hpp>

#include <cstdio>
#include <type_traits>
#include <utility>

using namespace tenon;

namespace {

template <class A, class B>
inline constexpr bool same = std::is_same_v<A, B>;

// ---- Signatures: data types and static widths of layers -------------------------------------
static_assert(same<Relu<512, 784>::In, Floats2d> && same<Relu<512, 784>::Out, Floats2d>);
static_assert(same<Relu<512, 784>::InView, Floats2dCView> && same<Relu<512, 784>::OutView, Floats2dCView>);
static_assert(Relu<512, 784>::static_nO == 512 && Relu<512, 784>::static_nI == 784);
static_assert(Relu<512>::static_nO == 512 && Relu<512>::static_nI == dyn);
static_assert(Relu<>::static_nO == dyn && Relu<>::static_nI == dyn);
static_assert(Linear<10, 5>::static_nO == 10 && Softmax<10>::static_nO == 10 && Mish<7, 3>::static_nI == 3);
static_assert(Sigmoid<4>::static_nO == 4);
static_assert(Gelu<6, 3>::static_nI == 3 && Swish<6>::static_nO == 6 && HardSwish<>::static_nO == dyn);
static_assert(Maxout<10, 5, 2>::static_nO == 10 && Maxout<10, 5, 2>::static_nI == 5 && Maxout<10, 5, 2>::static_nP == 2);
static_assert(LayerNorm<64>::static_nO == 64 && LayerNorm<64>::static_nI == 64 && LayerNorm<>::static_nI == dyn);
static_assert(widths::static_nO<Dropout>() == dyn && widths::width_preserving<Dropout>);
static_assert(widths::width_preserving<Noop<>> && widths::width_preserving<SigmoidActivation>);
static_assert(!widths::width_preserving<Relu<>>);
static_assert(same<Noop<Ints1d>::In, Ints1d> && same<Noop<Ints1d>::Out, Ints1d>);

// ---- Width propagation through chain ---------------------------------------------------------
// Relu<512>() after a layer of static width 784 is Relu<512, 784>.
using P1 = decltype(Relu<784, 100>() >> Relu<512>());
static_assert(same<P1, Chain<Relu<784, 100>, Relu<512, 784>>>);
static_assert(P1::static_nI == 100 && P1::static_nO == 512);

// The Fashion-MNIST MLP: every nI after the first is known from the type.
using Mlp3 = decltype(Relu<512, 784>() >> Relu<512>() >> Softmax<10>());
static_assert(same<Mlp3, Chain<Relu<512, 784>, Relu<512, 512>, Softmax<10, 512>>>);
static_assert(Mlp3::static_nI == 784 && Mlp3::static_nO == 10);
static_assert(same<Mlp3::In, Floats2d> && same<Mlp3::Out, Floats2d>);
// The first nI stays dyn where the type does not say it (initialize resolves it).
using Open = decltype(Relu<512>() >> Relu<512>() >> Softmax<10>());
static_assert(same<Open, Chain<Relu<512>, Relu<512, 512>, Softmax<10, 512>>>);
static_assert(Open::static_nI == dyn && Open::static_nO == 10);

// LayerNorm<> takes the width it receives and passes it on.
using PN = decltype(Relu<512, 784>() >> LayerNorm<>() >> Relu<10>());
static_assert(same<PN, Chain<Relu<512, 784>, LayerNorm<512>, Relu<10, 512>>>);
static_assert(PN::static_nO == 10);

// Dropout, noop() and sigmoid_activation pass the width through (and keep their types).
static_assert(same<decltype(Gelu<8, 4>() >> Swish<6>() >> HardSwish<2>()),
                   Chain<Gelu<8, 4>, Swish<6, 8>, HardSwish<2, 6>>>);
using PD = decltype(Relu<512, 784>() >> Dropout(0.2) >> Noop<>() >> SigmoidActivation() >> Softmax<10>());
static_assert(same<PD, Chain<Relu<512, 784>, Dropout, Noop<>, SigmoidActivation, Softmax<10, 512>>>);
static_assert(PD::static_nI == 784 && PD::static_nO == 10);
// A chain that ends in a width-preserving layer has the width of the layer before it.
using PE = decltype(Relu<512, 784>() >> Dropout());
static_assert(PE::static_nO == 512 && PE::static_nI == 784);
// A chain of width-preserving layers only has no static width.
using PW = decltype(Dropout() >> Noop<>());
static_assert(PW::static_nO == dyn && PW::static_nI == dyn && PW::width_preserving);

// ---- chain flattens and is associative, also after propagation -------------------------------
using A = Relu<512, 784>;
using B = Relu<256>;
using C = Softmax<10>;
using Flat = decltype(chain(A(), B(), C()));
static_assert(same<Flat, Chain<Relu<512, 784>, Relu<256, 512>, Softmax<10, 256>>>);
static_assert(same<decltype(chain(chain(A(), B()), C())), Flat>);
static_assert(same<decltype(chain(A(), chain(B(), C()))), Flat>);
static_assert(same<decltype(A() >> B() >> C()), Flat>);
static_assert(same<decltype(A() >> (B() >> C())), Flat>);
static_assert(same<decltype(chain(A() >> B(), C())), Flat>);
static_assert(same<decltype(chain(chain(A()), chain(B()), chain(C()))), Flat>);
// A chain of one layer is a chain.
static_assert(same<decltype(chain(A())), Chain<A>>);
// Lvalues and rvalues give the same types.
inline A a_lvalue;
static_assert(same<decltype(a_lvalue >> B() >> C()), Flat>);
static_assert(same<decltype(chain(std::as_const(a_lvalue), B(), C())), Flat>);

// ---- clone keeps the layer's widths -----------------------------------------------------------
using CL = decltype(clone(Relu<512, 512>(), 3));
static_assert(same<CL, Clone<Relu<512, 512>>>);
static_assert(CL::static_nO == 512 && CL::static_nI == 512);
// The width before a clone flows into its copies.
static_assert(same<decltype(Relu<512, 784>() >> clone(Relu<512>(), 2) >> Softmax<10>()),
                   Chain<Relu<512, 784>, Clone<Relu<512, 512>>, Softmax<10, 512>>>);
// ... and into a chain inside a residual inside a clone, even where the residual's width is
// already fixed by its layer's nO (96): expand_window gets nI 96, the Maxout nI 288.
using Encoder96 = decltype(Relu<96, 16>() >> clone(residual(expand_window<1>() >> Maxout<96, 288, 3>()), 2));
static_assert(
    same<Encoder96, Chain<Relu<96, 16>, Clone<Residual<Chain<ExpandWindow<Floats2d, 1, 96>, Maxout<96, 288, 3>>>>>>);
using Windowed96 = decltype(Relu<96, 16>() >> with_array<Floats2d>(expand_window<1>() >> Relu<96>()));
static_assert(same<Windowed96::Layers, ChainLayers<Relu<96, 16>, WithArray<Chain<ExpandWindow<Floats2d, 1, 96>,
                                                                                Relu<96, 288>>,
                                                                          Floats2d, false>>>);
// ... and through the sequence wrappers (with_list, with_ragged, with_padded) into their layers.
using ListIn = decltype(list2ragged() >> with_array<Ragged>(Relu<96, 8>()) >>
                        with_list<Ragged>(with_array<List<Floats2d>>(Relu<32>())));
static_assert(same<ListIn::Layers, ChainLayers<List2Ragged<Floats2d>, WithArray<Relu<96, 8>, Ragged, false>,
                                               WithList<WithArray<Relu<32, 96>, List<Floats2d>, false>, Ragged>>>);
using RaggedIn = decltype(with_array<List<Floats2d>>(Relu<96, 8>()) >>
                          with_ragged<List<Floats2d>>(with_array<Ragged>(Relu<32>())));
static_assert(same<RaggedIn::Layers, ChainLayers<WithArray<Relu<96, 8>, List<Floats2d>, false>,
                                                 WithRagged<WithArray<Relu<32, 96>, Ragged, false>, List<Floats2d>>>>);
using PaddedIn = decltype(with_array<List<Floats2d>>(Relu<96, 8>()) >>
                          with_padded<List<Floats2d>>(with_array<Padded>(Relu<32>())));
static_assert(same<PaddedIn::Layers, ChainLayers<WithArray<Relu<96, 8>, List<Floats2d>, false>,
                                                 WithPadded<WithArray<Relu<32, 96>, Padded, false>, List<Floats2d>>>>);
static_assert(same<decltype(clone(Relu<>(), 2)), Clone<Relu<>>> && Clone<Relu<>>::static_nO == dyn);
// An LSTM takes the width too (with_nI), inside bidirectional and clone: the BiLSTM encoder
// after a 6-wide layer is LSTM<4, 6> in both directions, and its output width 8 flows on.
using BiEncoder = decltype(with_array<List<Floats2d>>(Relu<6, 5>()) >> list2padded() >> bidirectional(LSTM<4>()) >>
                           padded2list() >> with_array<List<Floats2d>>(Softmax<3>()));
static_assert(same<BiEncoder::Layers,
                   ChainLayers<WithArray<Relu<6, 5>, List<Floats2d>, false>, List2Padded<Floats2d>,
                               Bidirectional<LSTM<4, 6>, LSTM<4, 6>>, Padded2List<Floats2d>,
                               WithArray<Softmax<3, 8>, List<Floats2d>, false>>>);

// ---- Named model types --------------------------------------------------------------------------
// The way to name a model type so that diagnostics say `Mlp` (docs/diagnostics.md): derive
// from the chain's type and construct the base from the same expression.
auto mlp_layers() { return Relu<512, 784>({.dropout = 0.2}) >> Relu<512>({.dropout = 0.2}) >> Softmax<10>(); }
struct Mlp : decltype(mlp_layers()) {
    Mlp() : Chain(mlp_layers()) {}
};
static_assert(Mlp::static_nI == 784 && Mlp::static_nO == 10);
// The same, constructible from a chain made elsewhere.
struct Encoder : decltype(Relu<64, 32>() >> Relu<16>()) {
    explicit Encoder(Chain c) : Chain(std::move(c)) {}
};
static_assert(std::is_constructible_v<Encoder, decltype(Relu<64, 32>() >> Relu<16>())>);
static_assert(!std::is_convertible_v<decltype(Relu<64, 32>() >> Relu<16>()), Encoder>);
static_assert(same<decltype(Encoder(Relu<64, 32>() >> Relu<16>()) >> Softmax<2>()), Chain<Encoder, Softmax<2, 16>>>);
static_assert(same<Mlp::In, Floats2d> && same<Mlp::Out, Floats2d>);
// A named model is one layer inside a bigger chain (not flattened), and widths flow through it.
using Big = decltype(Mlp() >> Relu<5>());
static_assert(same<Big, Chain<Mlp, Relu<5, 10>>>);
static_assert(Big::static_nI == 784 && Big::static_nO == 5);
static_assert(same<decltype(chain(Relu<784, 100>(), Mlp(), Softmax<3>())), Chain<Relu<784, 100>, Mlp, Softmax<3, 10>>>);

// ---- The Model concept ----------------------------------------------------------------------------
static_assert(Model<Relu<>> && Model<Relu<512, 784>> && Model<Linear<>> && Model<Softmax<10>> && Model<Mish<>>);
static_assert(Model<Gelu<>> && Model<Swish<4>> && Model<HardSwish<4, 3>>);
static_assert(Model<Sigmoid<>> && Model<Maxout<>> && Model<LayerNorm<>> && Model<Dropout> && Model<SigmoidActivation>);
static_assert(Model<Noop<>> && Model<Noop<Ints1d>> && Model<Mlp3> && Model<Clone<Relu<>>> && Model<Mlp> && Model<Big>);
static_assert(Model<Relu<>&> && Model<const Mlp&>);
static_assert(!Model<int> && !Model<Floats2d> && !Model<Optimizer>);

// ---- What begin_update returns ------------------------------------------------------------------
// The backprop callback is the layer's Backprop (wrapped to name a wrong dY, E011) and converts
// to it, so combinators and std::function keep working.
using Update = decltype(std::declval<Mlp3&>().begin_update(std::declval<Floats2dCView>()));
static_assert(same<Update::first_type, Floats2d>);
static_assert(std::is_convertible_v<Update::second_type, Mlp3::Backprop>);
static_assert(std::is_invocable_r_v<Floats2d, const Update::second_type&, Floats2dCView>);
static_assert(std::is_invocable_r_v<Floats2d, const Update::second_type&, const Floats2d&>);

// ---- Conversions between arrays with different static extents ------------------------------------
// Not implicit (overload resolution is unchanged); written explicitly they fail with E013.
static_assert(!std::is_convertible_v<Array<float, dyn, 4>&, ArrayView<float, dyn, 5>>);
static_assert(!std::is_convertible_v<ArrayView<float, dyn, 4>, ArrayView<float, dyn, 5>>);
static_assert(std::is_convertible_v<Array<float, dyn, 4>&, ArrayView<const float, dyn, dyn>>);

// ---- AnyModel: any model of its signature converts to it; its widths are dyn ------------------------
static_assert(Model<AnyModel<Floats2d, Floats2d>>);
static_assert(std::is_convertible_v<Mlp, AnyModel<Floats2d, Floats2d>>);
static_assert(!std::is_convertible_v<double, AnyModel<Floats2d, Floats2d>>);
static_assert(AnyModel<Floats2d, Floats2d>::static_nI == dyn && AnyModel<Floats2d, Floats2d>::static_nO == dyn);
static_assert(same<decltype(AnyModel<Floats2d, Floats2d>(Relu<4>()) >> Softmax<3>()),
                   Chain<AnyModel<Floats2d, Floats2d>, Softmax<3>>>);

// ---- How checks spell data types -------------------------------------------------------------------
static_assert(same<check::name_t<Floats2d>, check::Floats2d> && same<check::name_t<const Ints1d&>, check::Ints1d>);
static_assert(same<check::name_t<Floats2dCView>, check::Floats2dCView>);
static_assert(same<check::name_t<Array<float, dyn, 4>>, check::array<float, check::dyn_extent, check::extent<4>>>);
static_assert(same<check::name_t<int>, int>);

}  // namespace

int main() {
    // A named model is constructible, initialises and runs like the chain it names.
    auto model = Mlp() >> Relu<5>();
    model.initialize();
    Floats2d X({2, 784});
    const Floats2d Y = model.predict(X);
    if (Y.shape(0) != 2 || Y.shape(1) != 5) {
        std::printf("static_checks: unexpected output shape\n");
        return 1;
    }
    std::printf("static_checks: ok\n");
    return 0;
}

// ---- Each activation functor's flags are what the plan asks of its Activation value ---------------
template <class A>
constexpr bool flags_agree() {
    return fn::grad_reads_y(A::kind) == A::grad_reads_y && fn::grad_reads_z(A::kind) == A::grad_reads_z;
}
static_assert(flags_agree<fn::Relu>() && flags_agree<fn::Sigmoid>() && flags_agree<fn::Mish>() &&
              flags_agree<fn::Gelu>() && flags_agree<fn::Swish>() && flags_agree<fn::HardSwish>());
