// tenon::Error's members and the width-error helpers of error.hpp, out of line: every throw
// site in the headers is then a call, not the message-building code again in every file.
#include "tenon/error.hpp"
#include "tenon/model/node.hpp"

#include <charconv>
#include <utility>

namespace tenon {

namespace {
// A message of at most ~3000 characters: one that quotes a whole bad value (a megabyte of config
// text, a 2 MB node name) keeps its start and end, and says how much was cut (never inside a
// UTF-8 character).
std::string bounded(const std::string& m) {
    constexpr std::size_t limit = 4000, head = 2000, tail = 1000;
    if (m.size() <= limit) return m;
    auto cont = [&](std::size_t i) { return (static_cast<unsigned char>(m[i]) & 0xC0) == 0x80; };
    std::size_t a = head, b = m.size() - tail;
    while (a > 0 && cont(a)) --a;
    while (b < m.size() && cont(b)) ++b;
    return m.substr(0, a) + " ... [" + std::to_string(b - a) + " characters cut] ... " + m.substr(b);
}
}  // namespace

Error::Error(const std::string& message, std::string id)
    : std::runtime_error(id.empty() ? bounded(message) : "[" + id + "] " + bounded(message)),
      id_(std::move(id)),
      message_(bounded(message)),
      what_(std::runtime_error::what()) {}

Error::Error(const Error&) = default;
Error& Error::operator=(const Error&) = default;
Error::~Error() = default;

void Error::set_message(std::string message) {
    message_ = bounded(message);
    what_ = id_.empty() ? message_ : "[" + id_ + "] " + message_;
}

namespace detail {
std::string dim_str(std::size_t v) {
    return v == static_cast<std::size_t>(-1) ? std::string("dyn") : std::to_string(v);
}

void throw_width(std::string_view layer, std::string_view what, std::size_t expected, std::size_t found,
                 const char* id) {
    throw ShapeError(std::string(layer) + ": " + std::string(what) + ": expected width " + dim_str(expected) +
                         " but found " + dim_str(found),
                     id);
}
void check_nonempty_sequences(std::string_view layer, const std::int32_t* lengths, std::size_t n, const char* why) {
    for (std::size_t i = 0; i < n; ++i)
        if (lengths[i] == 0)
            throw ShapeError(std::string(layer) + ": sequence " + std::to_string(i) +
                                 " has length 0, but every sequence needs at least one row (" + why + ")",
                             "tenon-E190");
}
std::string number_str(double v) {
    char buf[64];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
}

std::string row_text(std::size_t row) {
    std::string s = "row " + std::to_string(row);
    const SequenceRows& q = sequence_rows;
    if (!q.lengths) return s;
    std::size_t at = 0;  // the first row of the next sequence's padding
    for (std::size_t i = 0; i < q.n; ++i) {
        const auto len = static_cast<std::size_t>(q.lengths[i] > 0 ? q.lengths[i] : 0);
        if (len == 0) continue;
        at += q.pad;
        if (row < at) return s + ": padding before sequence " + std::to_string(i);
        if (row < at + len) return s + ": sequence " + std::to_string(i) + ", row " + std::to_string(row - at);
        at += len;
    }
    return s;
}

void throw_zero_width(const Node& layer, const char* what, std::size_t rows, std::size_t nI) {
    throw ShapeError(layer.name() + ": " + what + ": an input of width 0 (" + std::to_string(rows) +
                         " rows, no columns): expected width " + dim_str(nI),
                     "tenon-E260");
}

void throw_gradient_shape(const Node& layer, std::size_t rows, std::size_t cols, std::size_t found_rows,
                          std::size_t found_cols) {
    throw ShapeError(layer.name() + ": backprop: expected a gradient of shape (" + std::to_string(rows) + ", " +
                         std::to_string(cols) + ") like the output, but found (" + std::to_string(found_rows) +
                         ", " + std::to_string(found_cols) + ")",
                     "tenon-E111");
}

void throw_sample_rows(const Node& layer, std::size_t x_rows, std::size_t y_rows) {
    throw ShapeError(layer.name() + ": initialize(X, Y): X and Y must have the same number of rows "
                                    "(one per example): expected " +
                         std::to_string(x_rows) + " rows in Y (as in X) but found " + std::to_string(y_rows),
                     "tenon-E115");
}
}  // namespace detail

}  // namespace tenon
