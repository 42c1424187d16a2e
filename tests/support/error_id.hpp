// The id (or the message) of the tenon::Error a call throws: what a test compares with the id it expects.
// "no error" when it throws nothing; another exception is named as not a tenon::Error.
#pragma once
#include <exception>
#include <string>

#include "tenon/error.hpp"

namespace tenon::test {
template <class F>
std::string error_id(F&& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.id();
    } catch (const std::exception& e) {
        return std::string("not a tenon::Error: ") + e.what();
    }
    return "no error";
}
// The same for the whole message (the id and what the error says).
template <class F>
std::string error_message(F&& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    } catch (const std::exception& e) {
        return std::string("not a tenon::Error: ") + e.what();
    }
    return "no error";
}
}  // namespace tenon::test
