// to_categorical: integer labels -> one-hot rows (with optional label smoothing: the gold
// class gets 1 - s, every other class s / (n - 1), as Thinc).
#pragma once
#include <string>

#include "tenon/types/array.hpp"

namespace tenon {

inline Floats2d to_categorical(Ints1dCView labels, std::size_t n_classes, double label_smoothing = 0.0) {
    if (n_classes == 0) throw Error("to_categorical: n_classes must be >= 1", "tenon-E130");
    // (Written so that NaN fails too.)
    if (!(label_smoothing >= 0.0) || (n_classes > 1 && !(label_smoothing < double(n_classes - 1) / double(n_classes))) ||
        (n_classes == 1 && label_smoothing != 0.0))
        throw Error("to_categorical: label_smoothing must be in [0, (n_classes - 1) / n_classes), found " +
                        std::to_string(label_smoothing),
                    "tenon-E131");
    const std::size_t n = labels.shape(0);
    const auto off = static_cast<float>(n_classes > 1 ? label_smoothing / double(n_classes - 1) : 0.0);
    const auto on = static_cast<float>(1.0 - label_smoothing);
    Floats2d out({n, n_classes}, uninitialized);
    out.fill(off);
    for (std::size_t i = 0; i < n; ++i) {
        const std::int32_t c = labels[i];
        if (c < 0 || static_cast<std::size_t>(c) >= n_classes)
            throw Error("to_categorical: label " + std::to_string(c) + " at row " + std::to_string(i) +
                            " is outside [0, " + std::to_string(n_classes) + ")",
                        "tenon-E132");
        out(i, static_cast<std::size_t>(c)) = on;
    }
    return out;
}

}  // namespace tenon
