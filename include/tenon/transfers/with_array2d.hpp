// with_array2d<Kind>(layer, pad = 0): with_array for a layer on 2d arrays (Thinc's
// with_array2d): Kind is Floats2d, List<Floats2d>, Ragged or Padded (for a layer on another
// 2d array type A: A, List<A>, BasicRagged<A>, BasicPadded<A with a leading axis>), and a
// Padded's (T, B, N) data goes through the layer as (T*B, N) rows. A layer on other arrays
// is refused at compile time (tenon-E031). The model is named "with_array2d(...)" (Thinc
// names it "with_array(...)").
#pragma once
#include "tenon/transfers/with_array.hpp"

namespace tenon {

template <class Kind = detail::xfer::no_kind, class L>
auto with_array2d(L&& layer, std::size_t pad = 0) {
    using D = std::remove_cvref_t<L>;
    if constexpr (!detail::xfer::wrapper_ok<detail::xfer::with_array_sig_2d, D, Kind>())
        return detail::xfer::wrapper_failure<detail::xfer::with_array_sig_2d, D, Kind>();
    else return WithArray<D, Kind, true>(D(std::forward<L>(layer)), pad);
}

}  // namespace tenon
