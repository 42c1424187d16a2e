// padded2list<A = Floats2d>(): Padded (BasicPadded<A with a leading axis>) -> List<A>: each
// sequence's live rows, in the original order (Thinc's padded2list, ops.padded2list).
// Backprop: the gradients placed back in the input's layout (its order and padding).
#pragma once
#include "tenon/transfers/detail/transfer.hpp"

namespace tenon {

template <class A = Floats2d>
class Padded2List : public detail::xfer::Transfer<Padded2List<A>, BasicPadded<detail::xfer::add_axis_t<A>>, List<A>> {
    using P = BasicPadded<detail::xfer::add_axis_t<A>>;
    using Base = detail::xfer::Transfer<Padded2List<A>, P, List<A>>;
    friend Layer<Padded2List<A>, P, List<A>>;

public:
    Padded2List() : Base("padded2list") {}
    // lower(): the same rows (a stage over Padded, an LSTM's, orders them itself), no stage.
    static constexpr lowering::SameRows lowered_as{};

    struct Backprop {
        detail::xfer::PaddedLayout layout;
        typename A::shape_type shape{};  // for the width of an empty batch
        P operator()(const List<A>& dY) const { return layout.pad("padded2list", dY, shape); }
    };

private:
    void init_impl(const P*, const List<A>*) {}
    List<A> predict_impl(const P& X) const { return to_list(X); }
    std::pair<List<A>, Backprop> forward_impl(const P& X, bool) {
        Backprop bp{detail::xfer::PaddedLayout::of(X), {}};
        for (std::size_t d = 1; d < A::rank; ++d) bp.shape[d] = X.data().shape(d + 1);
        return {to_list(X), std::move(bp)};
    }
};

template <class A = Floats2d>
auto padded2list() {
    if constexpr (!detail::xfer::is_tarray2d_v<A>) {
        check::report<check::transfer_element<check::padded2list, check::given_type<check::name_t<A>>,
                                              check::expects_type<check::Floats2d>>>();
        return failed_model{};
    } else {
        return Padded2List<A>();
    }
}

}  // namespace tenon
