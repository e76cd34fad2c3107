// LoginGuard: the brute-force guard on logins (ServerOptions::
// max_failed_logins, failed_login_window). An address that fails
// `max_failures` logins within one window is blocked for a window; each
// further block in a row lasts twice the one before (up to 64 windows).
// While an address is blocked its logins are refused before the secret is
// checked. A successful login forgets the address.
//
// The table of addresses is bounded (`max_addresses`): entries that no
// longer matter expire, and a full table forgets the address whose last
// failure is oldest. Thread-safe (one mutex, taken only for logins).
#ifndef SKIFF_SERVER_INTERNAL_LOGIN_GUARD_H_
#define SKIFF_SERVER_INTERNAL_LOGIN_GUARD_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>

#include "base/clock.h"
#include "base/mutex.h"

namespace skiff::server::internal {

class LoginGuard {
 public:
  // `max_failures` 0: the guard is off (every call is a no-op). `clock`
  // must outlive this.
  LoginGuard(const Clock& clock, size_t max_failures, std::chrono::milliseconds window,
             size_t max_addresses = 65536);

  bool enabled() const { return max_failures_ > 0; }

  // Before a login from `address` is checked: 0 when it may go ahead, else
  // the milliseconds until the address is let try again.
  uint64_t Blocked(const std::string& address);
  // A login from `address` failed (wrong user or secret).
  void Failed(const std::string& address);
  // A login from `address` succeeded: its failures are forgotten.
  void Succeeded(const std::string& address);

  size_t tracked() const;  // addresses held now

 private:
  struct Entry {
    int64_t window_start_ns = 0;  // of the failures being counted
    int64_t blocked_until_ns = 0;
    int64_t last_failure_ns = 0;
    uint32_t failures = 0;  // within the current window
    uint32_t blocks = 0;    // in a row
  };
  int64_t NowNs() const { return clock_.Now().time_since_epoch().count(); }
  int64_t BlockNs(uint32_t blocks) const;
  // An entry that holds no block and no failure worth counting.
  bool Expired(const Entry& e, int64_t now_ns) const;
  void MakeRoom(int64_t now_ns) SKIFF_REQUIRES(mu_);

  const Clock& clock_;
  const size_t max_failures_;
  const int64_t window_ns_;
  const size_t max_addresses_;
  mutable Mutex mu_;
  std::unordered_map<std::string, Entry> entries_ SKIFF_GUARDED_BY(mu_);
};

}  // namespace skiff::server::internal

#endif  // SKIFF_SERVER_INTERNAL_LOGIN_GUARD_H_
