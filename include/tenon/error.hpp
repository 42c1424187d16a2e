// tenon::Error: every run-time failure the library reports. Messages name the layer and
// the expected and found values; `id()` is the diagnostic id (docs/lifecycle.md lists them).
#pragma once
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace tenon {

class Error : public std::runtime_error {
public:
    // (The constructors and setters are defined in src/error.cpp: a throw site in a header
    // then compiles to a call.)
    explicit Error(const std::string& message, std::string id = {});
    Error(const Error&);
    Error& operator=(const Error&);
    ~Error() override;
    const std::string& id() const noexcept { return id_; }
    const char* what() const noexcept override { return what_.c_str(); }
    // The message without the "[id] " prefix.
    const std::string& message() const noexcept { return message_; }
    // Replaces the message (the id stays, and so does the exception's type): the model's
    // entry points use it to name the node that threw by its path from the model called.
    void set_message(std::string message);
    // Where in the model the error arose ("chain>1>clone>0>residual>chain>1>maxout"), when a
    // model's entry point (initialize, predict, begin_update, operator()) saw it; else "".
    const std::string& node_path() const noexcept { return node_path_; }
    void set_node_path(std::string path) { node_path_ = std::move(path); }

    // For the entry points: the node whose entry point saw the error first (its innermost),
    // and the message as that node threw it (so that a second rewrite starts from it).
    const void* origin() const noexcept { return origin_; }
    void set_origin(const void* node) {
        origin_ = node;
        original_ = message_;
    }
    const std::string& original_message() const noexcept { return original_; }

private:
    std::string id_;
    std::string message_;
    std::string what_;
    std::string node_path_;
    std::string original_;
    const void* origin_ = nullptr;
};

// A width (or other dim) that differs from the one a layer expects.
class ShapeError : public Error {
public:
    using Error::Error;
};

class Node;

namespace detail {
// Small helper so message building stays readable at the throw sites.
std::string dim_str(std::size_t v);  // "dyn" or the number
// A number as messages print it: the shortest text that reads back as the same double
// ("1.0000001", "-1e-300", "nan"), where std::to_string's "%f" gives "1.000000", "-0.000000".
std::string number_str(double v);
[[noreturn]] void throw_width(std::string_view layer, std::string_view what, std::size_t expected,
                              std::size_t found, const char* id = "tenon-E101");
// tenon-E190 for the first of n sequences (given by their lengths) that has no row, where a
// reduction needs one (`why`): reduce_first/last/max's check, in the layer and in a plan.
void check_nonempty_sequences(std::string_view layer, const std::int32_t* lengths, std::size_t n, const char* why);
// A layer's input or gradient of the wrong shape (tenon-E260, E111), sample rows that differ
// (E115): out of line, so that no layer type compiles the message.
[[noreturn]] void throw_zero_width(const Node& layer, const char* what, std::size_t rows, std::size_t nI);
[[noreturn]] void throw_gradient_shape(const Node& layer, std::size_t rows, std::size_t cols, std::size_t found_rows,
                                       std::size_t found_cols);
[[noreturn]] void throw_sample_rows(const Node& layer, std::size_t x_rows, std::size_t y_rows);

// The sequences whose rows a layer's input holds back to back (`pad` rows before each non-empty
// one and after the last, as flatten lays them out), set for the call of the layer by
// with_array over a List or a Ragged and by a plan's table stage, so that an error about one
// row of that input can say which sequence it is in (row_text).
struct SequenceRows {
    const std::int32_t* lengths = nullptr;
    std::size_t n = 0, pad = 0;
};
inline thread_local SequenceRows sequence_rows{};
class SequenceRowsScope {
public:
    SequenceRowsScope(const std::int32_t* lengths, std::size_t n, std::size_t pad) noexcept : saved_(sequence_rows) {
        sequence_rows = {lengths, n, pad};
    }
    ~SequenceRowsScope() { sequence_rows = saved_; }
    SequenceRowsScope(const SequenceRowsScope&) = delete;
    SequenceRowsScope& operator=(const SequenceRowsScope&) = delete;

private:
    SequenceRows saved_;
};
// "row 2802", or "row 2802: sequence 700, row 2" when the rows are sequences' (src/error.cpp).
std::string row_text(std::size_t row);
}  // namespace detail
}  // namespace tenon
