// StaticVectors' checks and the vectors file reader (include/tenon/layers/staticvectors.hpp),
// compiled once.
#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tenon/layers/staticvectors.hpp"

namespace tenon {

namespace detail {

void check_vectors(const Node& layer, const Floats2d* V, std::size_t nM) {
    if (!V) throw Error(layer.name() + ": set_vectors: no table given (a null pointer)", "tenon-E278");
    if (V->shape(0) == 0 || V->shape(0) > (std::size_t{1} << 32))
        throw Error(layer.name() + ": the vectors table must have between 1 and 2^32 rows, found " +
                        std::to_string(V->shape(0)) + " (ids >= nV read row 0)",
                    "tenon-E281");
    if (V->shape(1) == 0) throw Error(layer.name() + ": the vectors table has rows of width 0", "tenon-E281");
    if (nM != dyn && V->shape(1) != nM)
        throw ShapeError(layer.name() + ": the vectors table's width must be nM = " + std::to_string(nM) +
                             ", but the table has rows of " + std::to_string(V->shape(1)) + " (table " +
                             std::to_string(V->shape(0)) + " x " + std::to_string(V->shape(1)) + ")",
                         "tenon-E279");
}

void throw_vectors_unset(const Node& layer, const char* call) {
    throw Error(layer.name() + ": " + call +
                    ": vectors unset: give the table to the constructor or set_vectors (a model file does not hold "
                    "it)",
                "tenon-E278");
}

void throw_negative_vector_id(const Node& layer, std::int64_t id, std::size_t row) {
    throw Error(layer.name() + ": id " + std::to_string(id) + " (row " + std::to_string(row) +
                    ") is negative; ids must be >= 0 (an id >= nV reads row 0)",
                "tenon-E280");
}

}  // namespace detail

namespace {
[[noreturn]] void bad_file(const std::string& path, const std::string& what) {
    throw Error("load_vectors: " + path + ": " + what, "tenon-E283");
}

// A 2-d .npy of little-endian float32 or float64 in C order.
std::shared_ptr<const Floats2d> load_npy(const std::string& path, std::ifstream& in) {
    char magic[8];
    if (!in.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0) bad_file(path, "not a .npy file");
    const int major = static_cast<unsigned char>(magic[6]);
    std::uint32_t hlen = 0;
    unsigned char lb[4] = {0, 0, 0, 0};
    if (major == 1) {
        if (!in.read(reinterpret_cast<char*>(lb), 2)) bad_file(path, "truncated header");
        hlen = lb[0] | (std::uint32_t{lb[1]} << 8);
    } else if (major == 2 || major == 3) {
        if (!in.read(reinterpret_cast<char*>(lb), 4)) bad_file(path, "truncated header");
        hlen = lb[0] | (std::uint32_t{lb[1]} << 8) | (std::uint32_t{lb[2]} << 16) | (std::uint32_t{lb[3]} << 24);
    } else {
        bad_file(path, ".npy format version " + std::to_string(major) + " (expected 1, 2 or 3)");
    }
    if (hlen > (1u << 20)) bad_file(path, "header too long");
    std::string header(hlen, '\0');
    if (!in.read(header.data(), hlen)) bad_file(path, "truncated header");
    auto value_of = [&](const std::string& key) {
        const auto k = header.find("'" + key + "'");
        if (k == std::string::npos) bad_file(path, "no '" + key + "' in the header: " + header);
        auto v = header.find(':', k);
        if (v == std::string::npos) bad_file(path, "bad header: " + header);
        ++v;
        while (v < header.size() && header[v] == ' ') ++v;
        return v;
    };
    std::size_t v = value_of("descr");
    const std::string descr = header.substr(v, 5);
    std::size_t width = 0;
    if (descr == "'<f4'") width = 4;
    else if (descr == "'<f8'") width = 8;
    else bad_file(path, "dtype " + descr + ": expected float32 or float64 ('<f4' or '<f8')");
    v = value_of("fortran_order");
    if (header.compare(v, 5, "False") != 0) bad_file(path, "Fortran order: save the array in C order");
    v = value_of("shape");
    const auto close = header.find(')', v);
    if (header[v] != '(' || close == std::string::npos) bad_file(path, "bad shape in the header: " + header);
    std::vector<std::size_t> shape;
    std::istringstream dims(header.substr(v + 1, close - v - 1));
    std::string part;
    while (std::getline(dims, part, ',')) {
        if (part.find_first_not_of(' ') == std::string::npos) continue;
        try {
            shape.push_back(static_cast<std::size_t>(std::stoull(part)));
        } catch (const std::exception&) {
            bad_file(path, "bad shape in the header: " + header);
        }
    }
    if (shape.size() != 2) bad_file(path, "the array has rank " + std::to_string(shape.size()) + ", expected 2");
    auto V = std::make_shared<Floats2d>(std::array<std::size_t, 2>{shape[0], shape[1]}, uninitialized);
    const std::size_t n = shape[0] * shape[1];
    if (width == 4) {
        if (!in.read(reinterpret_cast<char*>(V->data()), static_cast<std::streamsize>(n * 4)))
            bad_file(path, "truncated data: expected " + std::to_string(n) + " float32 values");
    } else {
        std::vector<double> d(n);
        if (!in.read(reinterpret_cast<char*>(d.data()), static_cast<std::streamsize>(n * 8)))
            bad_file(path, "truncated data: expected " + std::to_string(n) + " float64 values");
        for (std::size_t i = 0; i < n; ++i) (*V)[i] = static_cast<float>(d[i]);
    }
    return V;
}

// One vector per line, numbers separated by whitespace; blank lines are skipped.
std::shared_ptr<const Floats2d> load_text(const std::string& path, std::ifstream& in) {
    std::vector<float> values;
    std::size_t width = 0, rows = 0, lineno = 0;
    std::string line;
    while (std::getline(in, line)) {
        ++lineno;
        std::istringstream s(line);
        std::size_t n = 0;
        std::string tok;
        while (s >> tok) {
            try {
                std::size_t used = 0;
                values.push_back(std::stof(tok, &used));
                if (used != tok.size()) throw std::invalid_argument(tok);
            } catch (const std::exception&) {
                bad_file(path, "line " + std::to_string(lineno) + ": '" + tok + "' is not a number");
            }
            ++n;
        }
        if (n == 0) continue;
        if (rows == 0) width = n;
        else if (n != width)
            bad_file(path, "line " + std::to_string(lineno) + " has " + std::to_string(n) + " numbers, expected " +
                               std::to_string(width) + " as the lines before");
        ++rows;
    }
    if (rows == 0) bad_file(path, "no vectors in the file");
    auto V = std::make_shared<Floats2d>(std::array<std::size_t, 2>{rows, width}, uninitialized);
    std::memcpy(V->data(), values.data(), values.size() * sizeof(float));
    return V;
}
}  // namespace

std::shared_ptr<const Floats2d> load_vectors(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) bad_file(path, "cannot open the file");
    const bool npy = path.size() >= 4 && path.compare(path.size() - 4, 4, ".npy") == 0;
    return npy ? load_npy(path, in) : load_text(path, in);
}

}  // namespace tenon
