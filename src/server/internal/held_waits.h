// HeldWaits: the sync waits one connection holds, so that a wait answered by
// the engine is sent at most once and waits of a closed connection are
// cancelled instead of answered.
//
// A wait is opened with a token before it reaches the engine (the engine may
// answer it before returning its id), bound to the engine's id once known,
// and answered or cancelled exactly once. Thread-safe (mu_): the engine's
// answers run on I/O threads other than the connection's handler.
#ifndef SKIFF_SERVER_INTERNAL_HELD_WAITS_H_
#define SKIFF_SERVER_INTERNAL_HELD_WAITS_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#include "base/mutex.h"

namespace skiff::server::internal {

class HeldWaits {
 public:
  // A new token; nullopt-like 0 when the connection is closed or already
  // holds `max` waits.
  uint64_t Open(size_t max) {
    MutexLock lock(&mu_);
    if (closed_ || waits_.size() >= max) return 0;
    uint64_t token = ++next_token_;
    waits_[token] = 0;
    return token;
  }

  // Records the engine's id of a held wait (no-op when already answered).
  void Bind(uint64_t token, uint64_t engine_id) {
    MutexLock lock(&mu_);
    if (auto it = waits_.find(token); it != waits_.end()) it->second = engine_id;
  }

  // True exactly once per open token, unless the connection closed first:
  // the caller then sends the answer.
  bool Answer(uint64_t token) {
    MutexLock lock(&mu_);
    return waits_.erase(token) > 0;
  }

  // Marks the connection closed and returns the engine ids to cancel.
  std::vector<uint64_t> Close() {
    MutexLock lock(&mu_);
    closed_ = true;
    std::vector<uint64_t> ids;
    for (const auto& [token, id] : waits_) {
      if (id != 0) ids.push_back(id);
    }
    waits_.clear();
    return ids;
  }

  size_t size() const {
    MutexLock lock(&mu_);
    return waits_.size();
  }

 private:
  mutable Mutex mu_;
  bool closed_ SKIFF_GUARDED_BY(mu_) = false;
  uint64_t next_token_ SKIFF_GUARDED_BY(mu_) = 0;
  std::map<uint64_t, uint64_t> waits_ SKIFF_GUARDED_BY(mu_);  // token -> engine id
};

}  // namespace skiff::server::internal

#endif  // SKIFF_SERVER_INTERNAL_HELD_WAITS_H_
