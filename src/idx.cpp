#include "tenon/data/idx.hpp"

#include <zlib.h>

#include <cstdint>
#include <filesystem>
#include <vector>

namespace tenon {
namespace {

// Reads a whole file, gunzipping it if it is compressed (gzread passes plain files through).
std::vector<unsigned char> slurp(const std::string& path) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
        throw Error("cannot read '" + path + "': it is a directory, not an IDX file (load_fashion_mnist takes the "
                    "directory)",
                    "tenon-E140");
    gzFile f = gzopen(path.c_str(), "rb");
    if (!f)
        throw Error("cannot open '" + path + "' (for Fashion-MNIST install Debian's dataset-fashion-mnist)",
                    "tenon-E140");
    std::vector<unsigned char> out;
    unsigned char buf[1 << 16];
    int n;
    while ((n = gzread(f, buf, sizeof buf)) > 0) out.insert(out.end(), buf, buf + n);
    const bool failed = n < 0;
    gzclose(f);
    if (failed) throw Error("'" + path + "': read error (corrupt gzip data?)", "tenon-E141");
    return out;
}

std::uint32_t be32(const unsigned char* p) {
    return (std::uint32_t(p[0]) << 24) | (std::uint32_t(p[1]) << 16) | (std::uint32_t(p[2]) << 8) | p[3];
}

// Validates the header; returns the dims.
std::vector<std::size_t> header(const std::vector<unsigned char>& d, const std::string& path, std::size_t ndim) {
    if (d.size() < 4 + 4 * ndim || d[0] != 0 || d[1] != 0 || d[2] != 0x08 || d[3] != ndim)
        throw Error("'" + path + "': not an IDX file of unsigned bytes with " + std::to_string(ndim) + " dims",
                    "tenon-E142");
    std::vector<std::size_t> dims;
    std::size_t total = 1;
    for (std::size_t i = 0; i < ndim; ++i) {
        dims.push_back(be32(d.data() + 4 + 4 * i));
        total *= dims.back();
    }
    if (d.size() != 4 + 4 * ndim + total)
        throw Error("'" + path + "': expected " + std::to_string(total) + " bytes of data, found " +
                        std::to_string(d.size() - 4 - 4 * ndim),
                    "tenon-E142");
    return dims;
}
}  // namespace

Floats2d read_idx_images(const std::string& path) {
    const auto d = slurp(path);
    const auto dims = header(d, path, 3);
    Floats2d X({dims[0], dims[1] * dims[2]}, uninitialized);
    const unsigned char* p = d.data() + 16;
    for (std::size_t i = 0, n = X.size(); i < n; ++i) X[i] = static_cast<float>(p[i]) / 255.0f;
    return X;
}

Ints1d read_idx_labels(const std::string& path) {
    const auto d = slurp(path);
    const auto dims = header(d, path, 1);
    Ints1d y({dims[0]}, uninitialized);
    for (std::size_t i = 0; i < dims[0]; ++i) y[i] = d[8 + i];
    return y;
}

Dataset load_fashion_mnist(const std::string& dir) {
    Dataset ds;
    ds.X_train = read_idx_images(dir + "/train-images-idx3-ubyte.gz");
    ds.y_train = read_idx_labels(dir + "/train-labels-idx1-ubyte.gz");
    ds.X_test = read_idx_images(dir + "/t10k-images-idx3-ubyte.gz");
    ds.y_test = read_idx_labels(dir + "/t10k-labels-idx1-ubyte.gz");
    if (ds.X_train.shape(0) != ds.y_train.shape(0) || ds.X_test.shape(0) != ds.y_test.shape(0))
        throw Error("Fashion-MNIST in '" + dir + "': image and label counts differ", "tenon-E142");
    return ds;
}

}  // namespace tenon
