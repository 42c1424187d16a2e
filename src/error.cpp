// tenon::Error's members and the width-error helpers of error.hpp, out of line: every throw
// site in the headers is then a call, not the message-building code again in every file.
#include "tenon/error.hpp"

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
}  // namespace detail

}  // namespace tenon
