// ReconnectGate: when PgSession may try to connect again after it lost its
// connection (to a crash, a restart, a failover to a standby), and what the
// operator hears of it.
//
// An outage is one episode: the first failure starts it and logs one
// warning, the connection that ends it logs one info line (where to, after
// how long and how many attempts). In between, attempts go out with back-off
// from 50 ms to 500 ms; a call that comes before the next attempt is due
// fails at once with unavailable instead of waiting, so requests caught in
// an outage are answered quickly and the server is not hammered. The cap
// keeps the time from a new primary being ready to the first write served
// under half a second.
//
// Not thread-safe: PgSession calls it under its mutex.
#ifndef SKIFF_STORE_INTERNAL_PG_RECONNECT_GATE_H_
#define SKIFF_STORE_INTERNAL_PG_RECONNECT_GATE_H_

#include <chrono>
#include <string>

#include "base/clock.h"
#include "base/logger.h"
#include "base/status.h"

namespace skiff::store::internal {

class ReconnectGate {
 public:
  static constexpr std::chrono::milliseconds kFirstBackoff{50};
  static constexpr std::chrono::milliseconds kMaxBackoff{500};

  // `clock` and `logger` must outlive the gate.
  ReconnectGate(const Clock& clock, Logger& logger) : clock_(clock), logger_(logger) {}

  // OK when an attempt to connect may go out now; otherwise unavailable,
  // saying how long the outage has lasted and what the last attempt met.
  Status MayTry() const;
  // The connection in use was lost (`why`): starts an episode if none runs.
  // The next attempt may go out at once.
  void Lost(const Status& why);
  // An attempt failed: starts an episode if none runs, and backs off when
  // `unreachable` (no server answered). A server that answered and refused
  // (the instance lock is held elsewhere) is asked again by the next call:
  // that attempt waits lock_timeout by itself.
  void Failed(const Status& why, bool unreachable);
  // Connected to `where`: ends the episode, if one runs.
  void Connected(const std::string& where);

  bool down() const { return down_; }

 private:
  void Begin(const Status& why);

  const Clock& clock_;
  Logger& logger_;
  bool down_ = false;
  Clock::TimePoint since_{};
  Clock::TimePoint next_try_{};
  std::chrono::milliseconds backoff_{kFirstBackoff};
  int attempts_ = 0;
  std::string last_error_;
};

}  // namespace skiff::store::internal

#endif  // SKIFF_STORE_INTERNAL_PG_RECONNECT_GATE_H_
