// tenon::Error: every run-time failure the library reports. Messages name the layer and
// the expected and found values; `id()` is the diagnostic id (docs/lifecycle.md lists them).
#pragma once
#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

namespace tenon {

class Error : public std::runtime_error {
public:
    explicit Error(const std::string& message, std::string id = {})
        : std::runtime_error(id.empty() ? message : "[" + id + "] " + message), id_(std::move(id)) {}
    const std::string& id() const noexcept { return id_; }

private:
    std::string id_;
};

// A width (or other dim) that differs from the one a layer expects.
class ShapeError : public Error {
public:
    using Error::Error;
};

namespace detail {
// Small helper so message building stays readable at the throw sites.
inline std::string dim_str(std::size_t v) {
    return v == static_cast<std::size_t>(-1) ? std::string("dyn") : std::to_string(v);
}
[[noreturn]] inline void throw_width(std::string_view layer, std::string_view what,
                                     std::size_t expected, std::size_t found,
                                     const char* id = "tenon-E101") {
    throw ShapeError(std::string(layer) + ": " + std::string(what) + ": expected width " +
                         dim_str(expected) + " but found " + dim_str(found),
                     id);
}
}  // namespace detail
}  // namespace tenon
