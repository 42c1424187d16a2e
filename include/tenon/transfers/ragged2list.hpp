// ragged2list<A = Floats2d>(): BasicRagged<A> (Ragged for Floats2d) -> List<A>: one array per
// sequence (Thinc's ragged2list). Backprop: the gradients concatenated, the input's lengths.
#pragma once
#include "tenon/transfers/detail/transfer.hpp"

namespace tenon {

template <class A = Floats2d>
class Ragged2List : public detail::xfer::Transfer<Ragged2List<A>, BasicRagged<A>, List<A>> {
    using Base = detail::xfer::Transfer<Ragged2List<A>, BasicRagged<A>, List<A>>;
    friend Layer<Ragged2List<A>, BasicRagged<A>, List<A>>;

public:
    Ragged2List() : Base("ragged2list") {}
    static constexpr lowering::SameRows lowered_as{};  // lower(): the same rows, no stage

    struct Backprop {
        Ints1d lengths;
        typename A::shape_type shape{};  // the input data's shape (the width of an empty batch)
        BasicRagged<A> operator()(const List<A>& dY) const {
            detail::xfer::check_list_lengths("ragged2list", lengths, dY);
            return detail::xfer::ragged_of(dY, "ragged2list", shape);
        }
    };

private:
    void init_impl(const BasicRagged<A>*, const List<A>*) {}
    List<A> predict_impl(const BasicRagged<A>& X) const { return to_list(X); }
    std::pair<List<A>, Backprop> forward_impl(const BasicRagged<A>& X, bool) {
        return {to_list(X), Backprop{X.lengths(), X.data().shape()}};
    }
};

template <class A = Floats2d>
auto ragged2list() {
    if constexpr (!detail::xfer::is_tarray_v<A>) {
        check::report<check::transfer_element<check::ragged2list, check::given_type<check::name_t<A>>,
                                              check::expects_type<check::Floats2d>>>();
        return failed_model{};
    } else {
        return Ragged2List<A>();
    }
}

}  // namespace tenon
