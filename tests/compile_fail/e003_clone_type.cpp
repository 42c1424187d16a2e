// expect: tenon-E003
// clone of a layer that maps Floats2d to Ints1d: its copies cannot be chained.
#include <tenon/tenon.hpp>
using namespace tenon;

struct Argmax : Layer<Argmax, Floats2d, Ints1d> {
    Argmax() : Layer("argmax", {}, {}) {}
    struct Backprop {
        Floats2d operator()(Ints1dCView) const { return {}; }
    };
    void init_impl(const Floats2dCView*, const Ints1dCView*) {}
    Ints1d predict_impl(Floats2dCView) const { return {}; }
    std::pair<Ints1d, Backprop> forward_impl(Floats2dCView, bool) { return {}; }
};

auto model = clone(Argmax(), 2);
