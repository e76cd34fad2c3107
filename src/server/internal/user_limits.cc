#include "server/internal/user_limits.h"

#include <functional>

namespace skiff::server::internal {
namespace {

uint64_t CeilMs(int64_t ns) { return static_cast<uint64_t>((ns + 999'999) / 1'000'000); }

}  // namespace

UserLimits::UserLimits(const Clock& clock, double rate, uint64_t burst, size_t max_sessions,
                       size_t max_users)
    : clock_(clock),
      rate_(rate),
      // An unset burst is one second's worth of the rate.
      bucket_(rate > 0 ? rate : 1,
              burst > 0 ? burst : std::max<uint64_t>(1, static_cast<uint64_t>(rate))),
      max_sessions_(max_sessions),
      max_per_shard_(std::max<size_t>(1, max_users / kShards)) {}

UserLimits::Shard& UserLimits::ShardFor(const std::string& user) {
  return shards_[std::hash<std::string>{}(user) % kShards];
}

uint64_t UserLimits::TakeRequest(const std::string& user) {
  if (rate_ <= 0) return 0;
  const int64_t now = clock_.NowCoarse().time_since_epoch().count();
  Shard& shard = ShardFor(user);
  MutexLock lock(&shard.mu);
  auto it = shard.full_at_ns.find(user);
  if (it == shard.full_at_ns.end()) {
    if (shard.full_at_ns.size() >= max_per_shard_) MakeRoom(shard, now);
    it = shard.full_at_ns.emplace(user, 0).first;
  }
  const int64_t wait = bucket_.Take(now, &it->second);
  return wait == 0 ? 0 : std::max<uint64_t>(1, CeilMs(wait));
}

void UserLimits::MakeRoom(Shard& shard, int64_t now_ns) {
  std::erase_if(shard.full_at_ns,
                [now_ns](const auto& entry) { return TokenBucket::Full(now_ns, entry.second); });
  // Every user of the shard is busy: forgetting one gives it a full bucket,
  // which only lets it send a burst more.
  if (shard.full_at_ns.size() >= max_per_shard_) shard.full_at_ns.erase(shard.full_at_ns.begin());
}

bool UserLimits::BeginSession(const std::string& user) {
  if (max_sessions_ == 0) return true;
  MutexLock lock(&sessions_mu_);
  size_t& count = sessions_[user];
  if (count >= max_sessions_) return false;
  ++count;
  return true;
}

bool UserLimits::SessionsFull(const std::string& user) const {
  if (max_sessions_ == 0) return false;
  MutexLock lock(&sessions_mu_);
  auto it = sessions_.find(user);
  return it != sessions_.end() && it->second >= max_sessions_;
}

void UserLimits::AddSession(const std::string& user) {
  if (max_sessions_ == 0) return;
  MutexLock lock(&sessions_mu_);
  ++sessions_[user];
}

void UserLimits::EndSession(const std::string& user) {
  if (max_sessions_ == 0) return;
  MutexLock lock(&sessions_mu_);
  auto it = sessions_.find(user);
  if (it == sessions_.end()) return;
  if (--it->second == 0) sessions_.erase(it);
}

size_t UserLimits::tracked_buckets() const {
  size_t n = 0;
  for (const Shard& shard : shards_) {
    MutexLock lock(&shard.mu);
    n += shard.full_at_ns.size();
  }
  return n;
}

size_t UserLimits::tracked_sessions() const {
  MutexLock lock(&sessions_mu_);
  return sessions_.size();
}

}  // namespace skiff::server::internal
