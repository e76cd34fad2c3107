#include "store/internal/pg_reconnect_gate.h"

#include <algorithm>
#include <cstdio>

namespace skiff::store::internal {
namespace {

double Seconds(Clock::Duration d) {
  return std::chrono::duration_cast<std::chrono::duration<double>>(d).count();
}

std::string Tenths(Clock::Duration d) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", Seconds(d));
  return text;
}

}  // namespace

Status ReconnectGate::MayTry() const {
  const Clock::TimePoint now = clock_.Now();
  if (!down_ || now >= next_try_) return Status::Ok();
  const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next_try_ - now);
  return Unavailable("PostgreSQL unreachable for " + Tenths(now - since_) +
                     " s, reconnecting (next attempt in " + std::to_string(wait.count()) +
                     " ms); last error: " + last_error_);
}

void ReconnectGate::Begin(const Status& why) {
  last_error_ = why.message();
  if (down_) return;
  down_ = true;
  since_ = clock_.Now();
  next_try_ = since_;
  backoff_ = kFirstBackoff;
  attempts_ = 0;
  Logf(logger_, LogLevel::kWarning, "store",
       "PostgreSQL connection lost (%s); calls fail with unavailable until it is back, "
       "reconnecting with back-off up to %lld ms",
       last_error_.c_str(), static_cast<long long>(kMaxBackoff.count()));
}

void ReconnectGate::Lost(const Status& why) { Begin(why); }

void ReconnectGate::Failed(const Status& why, bool unreachable) {
  Begin(why);
  ++attempts_;
  if (!unreachable) return;
  next_try_ = clock_.Now() + backoff_;
  backoff_ = std::min(backoff_ * 2, kMaxBackoff);
}

void ReconnectGate::Connected(const std::string& where) {
  if (!down_) return;
  down_ = false;
  Logf(logger_, LogLevel::kInfo, "store",
       "PostgreSQL reconnected to %s after %.1f s and %d failed attempt(s); session, "
       "statements and instance lock restored, serving again",
       where.c_str(), Seconds(clock_.Now() - since_), attempts_);
}

}  // namespace skiff::store::internal
