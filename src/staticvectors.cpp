// StaticVectors' checks and the vectors file reader (include/tenon/layers/staticvectors.hpp),
// compiled once.
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "tenon/layers/staticvectors.hpp"
#include "tenon/types/device_memory.hpp"

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
    throw Error(layer.name() + ": id " + std::to_string(id) + " (" + detail::row_text(row) +
                    ") is negative; ids must be >= 0 (an id >= nV reads row 0)",
                "tenon-E280");
}

struct VectorsCopy {
    std::mutex m;
    std::shared_ptr<const Floats2d> of;    // the table copied
    std::shared_ptr<const Floats2d> copy;  // ... in the backend's memory
};
std::shared_ptr<VectorsCopy> new_vectors_copy() { return std::make_shared<VectorsCopy>(); }
std::shared_ptr<const Floats2d> vectors_in(const Ops& ops, const std::shared_ptr<const Floats2d>& T, VectorsCopy& c) {
    if (!T || T->memory() == ops.memory()) return T;
    const std::lock_guard<std::mutex> lock(c.m);
    if (c.of != T || !c.copy || c.copy->memory() != ops.memory()) {
        auto d = std::make_shared<Floats2d>(T->shape(), uninitialized, ops.memory());
        copy_bytes(d->data(), ops.memory(), T->data(), T->memory(), T->size() * sizeof(float));
        c.copy = std::move(d);
        c.of = T;
    }
    return c.copy;
}

// The plan's stage (staticvectors.hpp): the scratch holds each row's table row (uint32), V[ids]
// (rows x nM, for dW) and the column mask (nO values; whether there is one: the call's host
// word 0); training adds dY masked.
namespace {
struct SvScratch {
    std::uint32_t* idx;
    float* V;
    float* mask;
};
float* take(float*& p, std::size_t n) {
    float* at = p;
    p += (n + 15) / 16 * 16;  // each part 64-byte aligned
    return at;
}
SvScratch sv_scratch(std::size_t rows, std::size_t nM, float* scratch) {
    float* p = scratch;
    SvScratch s;
    s.idx = reinterpret_cast<std::uint32_t*>(take(p, rows));
    s.V = take(p, rows * nM);
    s.mask = p;
    return s;
}
}  // namespace

void static_vectors_stage_scratch(const Node* layer, bool train, std::size_t& per_row, std::size_t& fixed) {
    const std::size_t nO = layer->get_dim("nO"), nM = layer->get_dim("nM");
    per_row = train ? nO : 1 + nM;
    fixed = train ? 0 : nO + 1 + 48;
}

void static_vectors_stage_forward(Node& l, const Floats2d* T, const lowering::SeqCall& c) {
    if (!T) throw_vectors_unset(l, "predict");
    const std::size_t nV = T->shape(0), nM = l.get_dim("nM"), nO = l.get_dim("nO"), rows = c.rows;
    if (T->shape(1) != nM) check_vectors(l, T, nM);  // (a file of another nM was loaded)
    const auto column = static_cast<std::size_t>(l.attr_as<std::int64_t>("column"));
    if (column >= c.cols && rows > 0)
        throw ShapeError(l.name() + ": column " + std::to_string(column) + " holds the ids, but the input has " +
                             std::to_string(c.cols) + " columns",
                         "tenon-E194");
    const SvScratch s = sv_scratch(rows, nM, c.scratch);
    const Ops& ops = *c.ops;
    // The table rows of the ids, on the host (the ids are read there: the negative id's error);
    // in the backend's memory they are made on the host and copied there (rows uint32).
    thread_local std::vector<std::uint32_t> staged;
    const bool direct = ops.memory() == Memory::host;
    if (!direct) staged.resize(rows);
    std::uint32_t* idx = direct ? s.idx : staged.data();
    for (std::size_t r = 0; r < rows; ++r) {
        const std::int32_t id = c.ids[r * c.cols + column];
        if (id < 0) throw_negative_vector_id(l, id, r);
        idx[r] = static_cast<std::size_t>(id) < nV ? static_cast<std::uint32_t>(id) : 0u;
    }
    if (!direct) copy_bytes(s.idx, ops.memory(), idx, Memory::host, rows * sizeof(std::uint32_t));
    ops.gather_add_rows(T->data(), nM, s.idx, rows, 1, s.V);
    if (rows) ops.gemm(false, true, rows, nO, nM, 1.0f, s.V, nM, l.get_param("W").data, nM, 0.0f, c.y, nO);
    c.host[0] = 0;
    if (c.train) {
        // The layer's column mask, drawn where the layer draws it (the stages run in model order).
        const Floats1d m = column_dropout_mask(l, nO, true);
        if (m.size()) {
            c.host[0] = 1;
            ops.copy_rows(m.data(), nO, s.mask, nO, 1, nO, false);
            apply_column_mask(ops, c.y, rows, m);
        }
    }
}

void static_vectors_stage_backward(Node* l, const lowering::SeqCall& c) {
    const std::size_t nM = l->get_dim("nM"), nO = l->get_dim("nO"), rows = c.rows;
    const SvScratch s = sv_scratch(rows, nM, c.scratch);
    const float* d = c.dy;
    if (c.host[0] != 0) {  // dY through the mask, into the training scratch
        c.ops->mask_columns(d, s.mask, rows, nO, c.train_scratch);
        d = c.train_scratch;
    }
    if (rows) c.ops->gemm(true, false, nO, nM, rows, 1.0f, d, nO, s.V, nM, 1.0f, l->get_grad("W").data, nM);
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
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) bad_file(path, "it is a directory, not a file of vectors");
    std::ifstream in(path, std::ios::binary);
    if (!in) bad_file(path, "cannot open the file");
    const bool npy = path.size() >= 4 && path.compare(path.size() - 4, 4, ".npy") == 0;
    return npy ? load_npy(path, in) : load_text(path, in);
}

}  // namespace tenon
