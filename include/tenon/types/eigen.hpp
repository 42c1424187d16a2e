// Zero-copy Eigen maps of tenon arrays: a rank-2 array is a row-major matrix, a rank-1
// array a column vector. Kept apart from types/array.hpp so that headers which only
// describe types do not pay for Eigen (about 1.5 s per translation unit).
#pragma once
#include <Eigen/Core>

#include <type_traits>

#include "tenon/types/array.hpp"

namespace tenon {

template <class T>
using EigenRowMatrix = Eigen::Matrix<std::remove_const_t<T>, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using EigenVector = Eigen::Matrix<std::remove_const_t<T>, Eigen::Dynamic, 1>;

// as_matrix(X): an Eigen::Map over a rank-2 view or array (const data gives a const map).
template <class T, extent_t R, extent_t C>
auto as_matrix(const ArrayView<T, R, C>& v) {
    using M = std::conditional_t<std::is_const_v<T>, const EigenRowMatrix<T>, EigenRowMatrix<T>>;
    return Eigen::Map<M>(v.data(), static_cast<Eigen::Index>(v.shape(0)), static_cast<Eigen::Index>(v.shape(1)));
}
template <class T, extent_t R, extent_t C>
auto as_matrix(Array<T, R, C>& a) {
    return as_matrix(a.view());
}
template <class T, extent_t R, extent_t C>
auto as_matrix(const Array<T, R, C>& a) {
    return as_matrix(a.view());
}

// as_vector(x): an Eigen::Map over a rank-1 view or array.
template <class T, extent_t N>
auto as_vector(const ArrayView<T, N>& v) {
    using M = std::conditional_t<std::is_const_v<T>, const EigenVector<T>, EigenVector<T>>;
    return Eigen::Map<M>(v.data(), static_cast<Eigen::Index>(v.shape(0)));
}
template <class T, extent_t N>
auto as_vector(Array<T, N>& a) {
    return as_vector(a.view());
}
template <class T, extent_t N>
auto as_vector(const Array<T, N>& a) {
    return as_vector(a.view());
}

}  // namespace tenon
