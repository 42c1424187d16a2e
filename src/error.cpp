// tenon::Error's members and the width-error helpers of error.hpp, out of line: every throw
// site in the headers is then a call, not the message-building code again in every file.
#include "tenon/error.hpp"
#include "tenon/model/node.hpp"

#include <utility>

namespace tenon {

Error::Error(const std::string& message, std::string id)
    : std::runtime_error(id.empty() ? message : "[" + id + "] " + message),
      id_(std::move(id)),
      message_(message),
      what_(std::runtime_error::what()) {}

Error::Error(const Error&) = default;
Error& Error::operator=(const Error&) = default;
Error::~Error() = default;

void Error::set_message(std::string message) {
    message_ = std::move(message);
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
