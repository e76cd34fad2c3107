// WaitRegistry: the held waits of the sync engine, indexed by group and by
// deadline, so a commit wakes exactly the waits that can see it and holding a
// wait costs no SQL at all.
//
// Not thread-safe: the sync engine guards it with its own mutex, the same one
// that guards the per-group sync ids, so a wait can never be registered just
// after the commit that should have woken it. Wake and Expire hand back the
// callbacks to run; the caller runs them after releasing its lock.
#ifndef SKIFF_SYNC_WAIT_REGISTRY_H_
#define SKIFF_SYNC_WAIT_REGISTRY_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/clock.h"

namespace skiff::sync {

class WaitRegistry {
 public:
  using WaitId = uint64_t;
  // Receives true when woken by a change, false on timeout or shutdown.
  using Callback = std::function<void(bool changed)>;
  using Groups = std::shared_ptr<const std::vector<std::string>>;

  // Holds a wait on `groups` until woken, expired or cancelled.
  WaitId Add(Groups groups, Clock::TimePoint deadline, Callback callback);

  // Removes a held wait without answering it (its connection closed).
  // False when it was no longer held.
  bool Cancel(WaitId id);

  // Removes every wait on any of `groups` and returns their callbacks.
  std::vector<Callback> TakeWoken(const std::vector<std::string>& groups);

  // Removes every wait whose deadline is at or before `now`.
  std::vector<Callback> TakeExpired(Clock::TimePoint now);

  // Removes every wait (shutdown).
  std::vector<Callback> TakeAll();

  std::optional<Clock::TimePoint> NextDeadline() const;
  size_t size() const { return waits_.size(); }

 private:
  using DeadlineIndex = std::multimap<Clock::TimePoint, WaitId>;
  struct Wait {
    Groups groups;
    DeadlineIndex::iterator deadline;
    Callback callback;
  };
  // Unlinks a wait from every index and returns its callback.
  Callback Remove(std::unordered_map<WaitId, Wait>::iterator it);

  WaitId next_id_ = 1;
  std::unordered_map<WaitId, Wait> waits_;
  std::unordered_map<std::string, std::unordered_set<WaitId>> by_group_;
  DeadlineIndex by_deadline_;
};

}  // namespace skiff::sync

#endif  // SKIFF_SYNC_WAIT_REGISTRY_H_
