// list2padded<A = Floats2d>(): List<A> -> Padded (BasicPadded<A with a leading axis>) for 2d
// arrays A: sorted by decreasing length, padded, time-major (Thinc's list2padded,
// ops.list2padded). Backprop: the gradient's live rows, back in the list's order.
#pragma once
#include "tenon/transfers/detail/transfer.hpp"

namespace tenon {

template <class A = Floats2d>
class List2Padded : public detail::xfer::Transfer<List2Padded<A>, List<A>, BasicPadded<detail::xfer::add_axis_t<A>>> {
    using P = BasicPadded<detail::xfer::add_axis_t<A>>;
    using Base = detail::xfer::Transfer<List2Padded<A>, List<A>, P>;
    friend Layer<List2Padded<A>, List<A>, P>;

public:
    List2Padded() : Base("list2padded") {}
    // lower(): the same rows (a stage over Padded, an LSTM's, orders them itself), no stage.
    static constexpr lowering::SameRows lowered_as{};

    struct Backprop {
        detail::xfer::PaddedLayout layout;
        List<A> operator()(const P& dY) const {
            layout.check("list2padded", dY);
            return to_list(dY);
        }
    };

private:
    void init_impl(const List<A>*, const P*) {}
    P predict_impl(const List<A>& X) const { return to_padded(X); }
    std::pair<P, Backprop> forward_impl(const List<A>& X, bool) {
        P Y = to_padded(X);
        Backprop bp{detail::xfer::PaddedLayout::of(Y)};
        return {std::move(Y), std::move(bp)};
    }
};

template <class A = Floats2d>
auto list2padded() {
    if constexpr (!detail::xfer::is_tarray2d_v<A>) {
        check::report<check::transfer_element<check::list2padded, check::given_type<check::name_t<A>>,
                                              check::expects_type<check::Floats2d>>>();
        return failed_model{};
    } else {
        return List2Padded<A>();
    }
}

}  // namespace tenon
