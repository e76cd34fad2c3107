// UserLimits: the limits per logged-in user (ServerOptions::user_rate,
// user_burst, max_connections_per_user): a token bucket per user shared by
// its connections, and the count of its sessions.
//
// Both tables hold only users that matter now: a bucket that has filled up
// again is dropped (it is the same as none), a user's count at zero too,
// and neither holds more than a fixed number of entries, so memory stays
// bounded whatever clients do. Thread-safe: the buckets are sharded by the
// user's name, each shard under its own mutex (taken only when a rate is
// set); the session counts under one mutex (taken only at login and when a
// session ends, when the limit is set).
#ifndef SKIFF_SERVER_INTERNAL_USER_LIMITS_H_
#define SKIFF_SERVER_INTERNAL_USER_LIMITS_H_

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>

#include "base/clock.h"
#include "base/mutex.h"
#include "server/internal/token_bucket.h"

namespace skiff::server::internal {

class UserLimits {
 public:
  // `rate` 0: no request limit; `max_sessions` 0: no session limit.
  // `max_users` bounds each table (a full table forgets its oldest
  // entries). `clock` must outlive this.
  UserLimits(const Clock& clock, double rate, uint64_t burst, size_t max_sessions,
             size_t max_users = 65536);

  bool limits_requests() const { return rate_ > 0; }
  bool limits_sessions() const { return max_sessions_ > 0; }

  // One request of `user`: 0 when it may run, else the milliseconds to
  // wait (at least 1).
  uint64_t TakeRequest(const std::string& user);
  // A session of `user` opens: true when under the limit (it then counts
  // until EndSession), false when the user holds max_sessions already.
  bool BeginSession(const std::string& user);
  void EndSession(const std::string& user);
  // Whether `user` holds max_sessions now (a check before BeginSession).
  bool SessionsFull(const std::string& user) const;
  // A session opened without a login (the cluster's own): counted, never
  // refused.
  void AddSession(const std::string& user);

  // Buckets and session counts held now (for the memory bound's tests).
  size_t tracked_buckets() const;
  size_t tracked_sessions() const;

 private:
  static constexpr size_t kShards = 32;
  struct Shard {
    mutable Mutex mu;
    std::unordered_map<std::string, int64_t> full_at_ns SKIFF_GUARDED_BY(mu);
  };
  Shard& ShardFor(const std::string& user);
  // Drops the buckets that are full again; if none is, any one entry.
  void MakeRoom(Shard& shard, int64_t now_ns) SKIFF_REQUIRES(shard.mu);

  const Clock& clock_;
  const double rate_;
  const TokenBucket bucket_;
  const size_t max_sessions_;
  const size_t max_per_shard_;
  std::array<Shard, kShards> shards_;
  mutable Mutex sessions_mu_;
  std::unordered_map<std::string, size_t> sessions_ SKIFF_GUARDED_BY(sessions_mu_);
};

}  // namespace skiff::server::internal

#endif  // SKIFF_SERVER_INTERNAL_USER_LIMITS_H_
