// Status and Result<T>: how every Skiff API reports failure.
//
// The codes are the protocol's error codes (docs/protocol.md), so a failure
// travels from a store adapter to the wire without being translated. Library
// exceptions never cross a layer boundary: adapters catch them and return a
// Status. Both types are plain values; they are thread-compatible (no shared
// state).
#ifndef SKIFF_BASE_STATUS_H_
#define SKIFF_BASE_STATUS_H_

#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "base/check.h"

namespace skiff {

enum class StatusCode {
  kOk = 0,
  kBadRequest,    // malformed or invalid input from outside
  kUnauthorized,  // not logged in, or bad credentials
  kForbidden,     // logged in but not allowed
  kTypeMismatch,  // e.g. add through a non-object or onto a non-number
  kTooLarge,      // a size or depth limit was exceeded
  kOverloaded,    // too much work in flight; retry later
  kUnavailable,   // a dependency (disk, PostgreSQL) failed; nothing was changed
  kInternal,      // a bug or corrupted data
  // A commit was sent but its outcome could not be learned (the connection
  // was lost at COMMIT and the check afterwards failed too): the change may
  // or may not have been applied. Only a retry that is safe to repeat
  // (set, delete, merge, a push) should be retried blindly.
  kOutcomeUnknown,
  // Between cluster instances only: the instance a request was forwarded
  // to does not serve the key's partition (it moved); the sender routes the
  // request again. Never sent to a client.
  kMoved,
  // A per-user or per-address limit refused the request (request rate,
  // connections of one user, failed logins of one address); the error
  // carries retry_after_ms. Appended after kMoved so existing codes keep
  // their values.
  kRateLimited,
};

// The wire name of a code ("bad_request", ...).
std::string_view StatusCodeName(StatusCode code);
// The inverse of StatusCodeName; nullopt for an unknown name.
std::optional<StatusCode> StatusCodeFromName(std::string_view name);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "bad_request: key is longer than 1024 bytes"; "ok" when ok.
  std::string ToString() const;

  friend bool operator==(const Status& a, const Status& b) {
    return a.code_ == b.code_ && a.message_ == b.message_;
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline std::ostream& operator<<(std::ostream& os, const Status& s) { return os << s.ToString(); }

inline Status BadRequest(std::string m) { return {StatusCode::kBadRequest, std::move(m)}; }
inline Status TypeMismatch(std::string m) { return {StatusCode::kTypeMismatch, std::move(m)}; }
inline Status TooLarge(std::string m) { return {StatusCode::kTooLarge, std::move(m)}; }
inline Status Unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
inline Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
inline Status Forbidden(std::string m) { return {StatusCode::kForbidden, std::move(m)}; }
inline Status Unauthorized(std::string m) { return {StatusCode::kUnauthorized, std::move(m)}; }
inline Status OutcomeUnknown(std::string m) { return {StatusCode::kOutcomeUnknown, std::move(m)}; }
inline Status Moved(std::string m) { return {StatusCode::kMoved, std::move(m)}; }

// Either a T or a non-OK Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}        // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {  // NOLINT: implicit by design
    SKIFF_CHECK(!std::get<Status>(v_).ok());
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  // The error, or OK when a value is held.
  Status status() const { return ok() ? Status() : std::get<Status>(v_); }

  T& value() & {
    SKIFF_CHECK(ok());
    return std::get<T>(v_);
  }
  const T& value() const& {
    SKIFF_CHECK(ok());
    return std::get<T>(v_);
  }
  T&& value() && {
    SKIFF_CHECK(ok());
    return std::get<T>(std::move(v_));
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace skiff

// Returns the Status of `expr` from the enclosing function when it is not OK.
#define SKIFF_RETURN_IF_ERROR(expr)                \
  do {                                             \
    ::skiff::Status skiff_status_ = (expr);        \
    if (!skiff_status_.ok()) return skiff_status_; \
  } while (0)

// Evaluates `expr` (a Result<T>) once; when it holds an error, returns that
// Status from the enclosing function, otherwise moves the value into `lhs`,
// which may declare a variable (`auto x`, `std::unique_ptr<Store> s`) or name
// an existing one. It expands to several statements in the enclosing scope, so
// it cannot be the unbraced body of an if or a loop, and a declared `lhs`
// holding a comma outside parentheses must be wrapped in a type alias.
#define SKIFF_ASSIGN_OR_RETURN(lhs, ...) \
  SKIFF_ASSIGN_OR_RETURN_IMPL_(SKIFF_STATUS_CONCAT_(skiff_result_, __COUNTER__), lhs, __VA_ARGS__)

#define SKIFF_ASSIGN_OR_RETURN_IMPL_(result, lhs, ...) \
  auto result = (__VA_ARGS__);                         \
  if (!result.ok()) return result.status();            \
  lhs = std::move(result).value()

#define SKIFF_STATUS_CONCAT_(a, b) SKIFF_STATUS_CONCAT_INNER_(a, b)
#define SKIFF_STATUS_CONCAT_INNER_(a, b) a##b

#endif  // SKIFF_BASE_STATUS_H_
