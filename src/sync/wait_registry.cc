#include "sync/wait_registry.h"

#include "base/check.h"

namespace skiff::sync {

WaitRegistry::WaitId WaitRegistry::Add(Groups groups, Clock::TimePoint deadline,
                                       Callback callback) {
  SKIFF_CHECK(groups != nullptr);
  const WaitId id = next_id_++;
  for (const std::string& group : *groups) by_group_[group].insert(id);
  auto at = by_deadline_.emplace(deadline, id);
  waits_.emplace(id, Wait{std::move(groups), at, std::move(callback)});
  return id;
}

WaitRegistry::Callback WaitRegistry::Remove(std::unordered_map<WaitId, Wait>::iterator it) {
  const WaitId id = it->first;
  for (const std::string& group : *it->second.groups) {
    auto g = by_group_.find(group);
    if (g == by_group_.end()) continue;
    g->second.erase(id);
    if (g->second.empty()) by_group_.erase(g);
  }
  by_deadline_.erase(it->second.deadline);
  Callback callback = std::move(it->second.callback);
  waits_.erase(it);
  return callback;
}

bool WaitRegistry::Cancel(WaitId id) {
  auto it = waits_.find(id);
  if (it == waits_.end()) return false;
  (void)Remove(it);  // a cancelled wait is not answered
  return true;
}

std::vector<WaitRegistry::Callback> WaitRegistry::TakeWoken(
    const std::vector<std::string>& groups) {
  std::vector<WaitId> ids;
  for (const std::string& group : groups) {
    auto g = by_group_.find(group);
    if (g != by_group_.end()) ids.insert(ids.end(), g->second.begin(), g->second.end());
  }
  std::vector<Callback> out;
  for (WaitId id : ids) {
    auto it = waits_.find(id);
    if (it != waits_.end()) out.push_back(Remove(it));  // already taken via another group
  }
  return out;
}

std::vector<WaitRegistry::Callback> WaitRegistry::TakeExpired(Clock::TimePoint now) {
  std::vector<Callback> out;
  while (!by_deadline_.empty() && by_deadline_.begin()->first <= now) {
    out.push_back(Remove(waits_.find(by_deadline_.begin()->second)));
  }
  return out;
}

std::vector<WaitRegistry::Callback> WaitRegistry::TakeAll() {
  std::vector<Callback> out;
  while (!waits_.empty()) out.push_back(Remove(waits_.begin()));
  return out;
}

std::optional<Clock::TimePoint> WaitRegistry::NextDeadline() const {
  if (by_deadline_.empty()) return std::nullopt;
  return by_deadline_.begin()->first;
}

}  // namespace skiff::sync
