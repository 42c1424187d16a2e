// Reading IDX files (the MNIST family's format, plain or gzip-compressed), and Fashion-MNIST
// from Debian's dataset-fashion-mnist package.
#pragma once
#include <string>

#include "tenon/types/array.hpp"

namespace tenon {

// An IDX file of unsigned bytes with 3 dims (n, rows, cols), as (n, rows * cols) floats
// scaled to [0, 1].
Floats2d read_idx_images(const std::string& path);
// An IDX file of unsigned bytes with 1 dim, as int labels.
Ints1d read_idx_labels(const std::string& path);

struct Dataset {
    Floats2d X_train;
    Ints1d y_train;
    Floats2d X_test;
    Ints1d y_test;
};

inline constexpr const char* fashion_mnist_dir = "/usr/share/datasets/fashion-mnist";
// Loads the four files of Fashion-MNIST from `dir` (60k training, 10k test images).
Dataset load_fashion_mnist(const std::string& dir = fashion_mnist_dir);

}  // namespace tenon
