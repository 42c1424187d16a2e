// list2ragged<A = Floats2d>(): List<A> -> BasicRagged<A> (Ragged for Floats2d): the arrays
// concatenated, lengths = their rows (Thinc's list2ragged). list2ragged<Ints1d>() for ids.
// Backprop: the gradient's data split at the lengths.
#pragma once
#include "tenon/transfers/detail/transfer.hpp"

namespace tenon {

template <class A = Floats2d>
class List2Ragged : public detail::xfer::Transfer<List2Ragged<A>, List<A>, BasicRagged<A>> {
    using Base = detail::xfer::Transfer<List2Ragged<A>, List<A>, BasicRagged<A>>;
    friend Layer<List2Ragged<A>, List<A>, BasicRagged<A>>;

public:
    List2Ragged() : Base("list2ragged") {}
    static constexpr lowering::SameRows lowered_as{};  // lower(): the same rows, no stage

    struct Backprop {
        Ints1d lengths;
        List<A> operator()(const BasicRagged<A>& dY) const {
            detail::xfer::check_lengths("list2ragged", lengths, dY.lengths());
            return to_list(dY);
        }
    };

private:
    void init_impl(const List<A>*, const BasicRagged<A>*) {}
    BasicRagged<A> predict_impl(const List<A>& X) const { return to_ragged(X); }
    std::pair<BasicRagged<A>, Backprop> forward_impl(const List<A>& X, bool) {
        BasicRagged<A> Y = to_ragged(X);
        Backprop bp{Y.lengths()};
        return {std::move(Y), std::move(bp)};
    }
};

template <class A = Floats2d>
auto list2ragged() {
    if constexpr (!detail::xfer::is_tarray_v<A>) {
        check::report<check::transfer_element<check::list2ragged, check::given_type<check::name_t<A>>,
                                              check::expects_type<check::Floats2d>>>();
        return failed_model{};
    } else {
        return List2Ragged<A>();
    }
}

}  // namespace tenon
