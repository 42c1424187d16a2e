// The check shared by with_getitem, with_reshape and with_debug: their layer argument is a
// tenon model (E049).
#pragma once
#include "tenon/model/diagnostics.hpp"

namespace tenon::check {
struct with_getitem_ {};
struct with_reshape_ {};
struct with_debug_ {};
template <class F>
struct combinator {};
// E049: a combinator's layer argument is not a tenon model.
template <class Combinator, class Given>
struct transfer_layer_argument {
    static_assert(always_false<Combinator>,
                  "[tenon-E049] with_getitem / with_reshape / with_debug: the layer argument must be a tenon model "
                  "(combinator<F> given not_a_model<T>: see the instantiation line)");
};
}  // namespace tenon::check
