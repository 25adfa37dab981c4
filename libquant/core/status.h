// One error model for the whole library: functions a user can make fail return
// Status or Expected<T>; internal invariants use assert.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace quant {

// The codes map one to one onto the CLI exit codes of DESIGN.md.
enum class StatusCode {
  kOk = 0,
  kInternal = 1,    // a bug or an environment failure (disk full, ...)
  kBadInput = 2,    // flags, model, profile or data the user gave are wrong
  kGateFailed = 3,  // an accuracy gate of qrun failed
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  static Status ok() { return {}; }
  static Status bad_input(std::string message) { return {StatusCode::kBadInput, std::move(message)}; }
  static Status internal(std::string message) { return {StatusCode::kInternal, std::move(message)}; }
  static Status gate_failed(std::string message) { return {StatusCode::kGateFailed, std::move(message)}; }

  bool is_ok() const { return code_ == StatusCode::kOk; }
  explicit operator bool() const { return is_ok(); }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // Prefixes context ("model.onnx: ") so the final message names the file / node.
  Status with_context(const std::string& context) const {
    if (is_ok()) return *this;
    return {code_, context + ": " + message_};
  }

 private:
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// A value or the Status explaining why there is none (std::expected is C++23).
template <class T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : data_(std::move(value)) {}  // NOLINT: implicit by design
  Expected(Status status) : data_(std::move(status)) { assert(!std::get<Status>(data_).is_ok()); }  // NOLINT

  bool has_value() const { return std::holds_alternative<T>(data_); }
  explicit operator bool() const { return has_value(); }

  T& value() & { assert(has_value()); return std::get<T>(data_); }
  const T& value() const& { assert(has_value()); return std::get<T>(data_); }
  T&& value() && { assert(has_value()); return std::get<T>(std::move(data_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  // `*std::move(e)` and `*make()` move the value out (without this overload
  // they bound to the const& one and copied it).
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  Status status() const { return has_value() ? Status::ok() : std::get<Status>(data_); }

 private:
  std::variant<T, Status> data_;
};

}  // namespace quant

#define QT_CONCAT_INNER(a, b) a##b
#define QT_CONCAT(a, b) QT_CONCAT_INNER(a, b)

// Returns the Status of `expr` from the enclosing function when it is an error.
#define QT_RETURN_IF_ERROR(expr)                   \
  do {                                             \
    ::quant::Status qt_status_ = (expr);           \
    if (!qt_status_.is_ok()) return qt_status_;    \
  } while (0)

#define QT_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                             \
  if (!tmp.has_value()) return tmp.status();     \
  lhs = std::move(tmp).value()

// `QT_ASSIGN_OR_RETURN(auto x, make_x());` unwraps an Expected or returns its error.
#define QT_ASSIGN_OR_RETURN(lhs, expr) QT_ASSIGN_OR_RETURN_IMPL(QT_CONCAT(qt_expected_, __LINE__), lhs, expr)
