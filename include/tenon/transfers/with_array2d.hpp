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
    if constexpr (!Model<D>) {
        static_assert(sizeof(check::transfer_argument<check::with_array2d, check::not_a_model<check::name_t<D>>>) > 0);
        return check::never<check::ok>();
    } else if constexpr (!detail::xfer::with_array_sig<D, true>::layer_ok) {
        static_assert(sizeof(typename detail::xfer::with_array_sig<D, true>::layer_check) > 0);
        return check::never<check::ok>();
    } else if constexpr (std::is_same_v<Kind, detail::xfer::no_kind>) {
        static_assert(sizeof(check::transfer_kind_missing<check::with_array2d, typename detail::xfer::with_array_sig<D, true>::accepts>) > 0);
        return check::never<check::ok>();
    } else if constexpr (!detail::xfer::with_array_sig<D, true>::template kind_ok<Kind>) {
        static_assert(sizeof(check::transfer_kind<check::with_array2d, check::given_type<check::name_t<Kind>>,
                                                  typename detail::xfer::with_array_sig<D, true>::accepts>) > 0);
        return check::never<check::ok>();
    } else {
        return WithArray<D, Kind, true>(D(std::forward<L>(layer)), pad);
    }
}

}  // namespace tenon
