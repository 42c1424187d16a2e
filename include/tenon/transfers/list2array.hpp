// list2array<A = Floats2d>(): List<A> -> A, the arrays concatenated (Thinc's list2array,
// ops.flatten); backprop splits the gradient at the arrays' rows (ops.unflatten). An empty
// list gives an array with 0 rows (and 0 columns: there is no array to take them from).
#pragma once
#include "tenon/transfers/detail/transfer.hpp"

namespace tenon {

template <class A = Floats2d>
class List2Array : public detail::xfer::Transfer<List2Array<A>, List<A>, A> {
    using Base = detail::xfer::Transfer<List2Array<A>, List<A>, A>;
    friend Layer<List2Array<A>, List<A>, A>;

public:
    List2Array() : Base("list2array") {}
    // lower(): the same rows, no stage (the plan's rows are the sequences' back to back); a
    // plan that ends here gives them as one array.
    static constexpr lowering::SameRows lowered_as{};

    struct Backprop {
        Ints1d lengths;
        List<A> operator()(typename A::const_view_type dY) const {
            if (dY.shape(0) != detail::xfer::flat_rows(lengths, 0))
                detail::xfer::throw_layout("list2array", "rows", std::to_string(detail::xfer::flat_rows(lengths, 0)),
                                           std::to_string(dY.shape(0)));
            return detail::xfer::unflatten<A>(dY, lengths, 0);
        }
    };

private:
    void init_impl(const List<A>*, const typename A::const_view_type*) {}
    A predict_impl(const List<A>& X) const { return detail::xfer::flatten(X, 0, "list2array"); }
    std::pair<A, Backprop> forward_impl(const List<A>& X, bool) {
        return {detail::xfer::flatten(X, 0, "list2array"), Backprop{detail::xfer::lengths_of(X)}};
    }
};

template <class A = Floats2d>
auto list2array() {
    if constexpr (!detail::xfer::is_tarray_v<A>) {
        check::report<check::transfer_element<check::list2array, check::given_type<check::name_t<A>>,
                                              check::expects_type<check::Floats2d>>>();
        return failed_model{};
    } else {
        return List2Array<A>();
    }
}

}  // namespace tenon
