#include "base/status.h"

#include <array>
#include <cstdio>
#include <cstdlib>

namespace skiff {
namespace {
constexpr std::array<std::string_view, 12> kCodeNames = {
    "ok",         "bad_request", "unauthorized", "forbidden",       "type_mismatch", "too_large",
    "overloaded", "unavailable", "internal",     "outcome_unknown", "moved",         "rate_limited",
};
}  // namespace

std::string_view StatusCodeName(StatusCode code) {
  return kCodeNames.at(static_cast<size_t>(code));
}

std::optional<StatusCode> StatusCodeFromName(std::string_view name) {
  for (size_t i = 0; i < kCodeNames.size(); ++i) {
    if (kCodeNames[i] == name) return static_cast<StatusCode>(i);
  }
  return std::nullopt;
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  std::string out(StatusCodeName(code_));
  out += ": ";
  out += message_;
  return out;
}

namespace internal {
void CheckFailed(const char* condition, const char* file, int line) {
  std::fprintf(stderr, "skiff: check failed: %s at %s:%d\n", condition, file, line);
  std::fflush(stderr);
  std::abort();
}
}  // namespace internal
}  // namespace skiff
