// Dropout's members (include/tenon/layers/dropout.hpp), out of line: Dropout is one type, so
// one copy in the library serves every model.
#include "tenon/layers/dropout.hpp"

#include <string>

namespace tenon {

Dropout::Dropout(double rate) : Base("dropout", {}, {}) {
    check_rate(rate);
    set_attr("dropout_rate", rate);
    set_attr("is_enabled", true);
    mark_initialized();  // nothing to initialise
}

// Checked on use too: the attribute may have been set after construction.
double Dropout::rate() const {
    const double r = attr_as<double>("dropout_rate");
    check_rate(r);
    return r;
}

Floats2d Dropout::Backprop::operator()(Floats2dCView dY) const {
    if (shape[0] != dyn && dY.shape() != shape)
        throw ShapeError("dropout: backprop: expected a gradient of shape (" + std::to_string(shape[0]) + ", " +
                             std::to_string(shape[1]) + ") like the output, but found (" +
                             std::to_string(dY.shape(0)) + ", " + std::to_string(dY.shape(1)) + ")",
                         "tenon-E111");
    Floats2d dX(dY);
    if (mask.size() == 0) return dX;
    ops->elementwise(Binary::mul, dX.data(), mask.data(), dX.data(), dX.size());
    return dX;
}

void Dropout::apply_inplace(Floats2d& Y, bool is_train, Backprop& bp) const {
    bp.shape = Y.shape();
    const double r = rate();
    const bool on = is_train && !detail::inference_pass && r > 0.0 && attr_as<bool>("is_enabled");
    if (!on) return;
    // On the layer's backend: Y may be device memory (the key is drawn on the host, as before).
    bp.mask = Floats2d(Y.shape(), uninitialized);
    bp.ops = &ops();
    ops().dropout_mask(r >= 1.0 ? 0 : dropout_key(global_rng()), bp.mask.data(), bp.mask.size(), r);
    ops().elementwise(Binary::mul, Y.data(), bp.mask.data(), Y.data(), Y.size());
}

void Dropout::check_rate(double rate) {
    if (!(rate >= 0.0 && rate <= 1.0))
        throw Error("dropout: the rate must be in [0, 1], found " + detail::number_str(rate), "tenon-E112");
}

}  // namespace tenon
