#include "server/internal/login_guard.h"

#include <algorithm>

namespace skiff::server::internal {
namespace {

constexpr uint32_t kMaxDoublings = 6;  // a block lasts at most 64 windows

}  // namespace

LoginGuard::LoginGuard(const Clock& clock, size_t max_failures, std::chrono::milliseconds window,
                       size_t max_addresses)
    : clock_(clock),
      max_failures_(max_failures),
      window_ns_(std::max<int64_t>(1, std::chrono::nanoseconds(window).count())),
      max_addresses_(std::max<size_t>(1, max_addresses)) {}

int64_t LoginGuard::BlockNs(uint32_t blocks) const {
  return window_ns_ << std::min(blocks > 0 ? blocks - 1 : 0, kMaxDoublings);
}

bool LoginGuard::Expired(const Entry& e, int64_t now_ns) const {
  // Kept while blocked, and afterwards for as long as the next block would
  // last, so that failing again right after a block doubles it.
  const int64_t keep = std::max(window_ns_, BlockNs(e.blocks + 1));
  return now_ns >= e.blocked_until_ns && now_ns - e.last_failure_ns >= keep;
}

uint64_t LoginGuard::Blocked(const std::string& address) {
  if (!enabled()) return 0;
  const int64_t now = NowNs();
  MutexLock lock(&mu_);
  auto it = entries_.find(address);
  if (it == entries_.end() || now >= it->second.blocked_until_ns) return 0;
  const int64_t left = it->second.blocked_until_ns - now;
  return std::max<uint64_t>(1, static_cast<uint64_t>((left + 999'999) / 1'000'000));
}

void LoginGuard::Failed(const std::string& address) {
  if (!enabled()) return;
  const int64_t now = NowNs();
  MutexLock lock(&mu_);
  auto it = entries_.find(address);
  if (it == entries_.end()) {
    if (entries_.size() >= max_addresses_) MakeRoom(now);
    it = entries_.emplace(address, Entry{}).first;
    it->second.window_start_ns = now;
  }
  Entry& e = it->second;
  if (Expired(e, now)) e = Entry{};
  if (e.failures == 0 || now - e.window_start_ns >= window_ns_) {
    e.window_start_ns = now;
    e.failures = 0;
  }
  e.last_failure_ns = now;
  if (++e.failures < max_failures_) return;
  ++e.blocks;
  e.blocked_until_ns = now + BlockNs(e.blocks);
  e.failures = 0;
}

void LoginGuard::Succeeded(const std::string& address) {
  if (!enabled()) return;
  MutexLock lock(&mu_);
  entries_.erase(address);
}

void LoginGuard::MakeRoom(int64_t now_ns) {
  std::erase_if(entries_, [&](const auto& entry) { return Expired(entry.second, now_ns); });
  if (entries_.size() < max_addresses_) return;
  // Full of live entries (a flood from many addresses): the one that failed
  // longest ago matters least.
  auto oldest =
      std::min_element(entries_.begin(), entries_.end(), [](const auto& a, const auto& b) {
        return a.second.last_failure_ns < b.second.last_failure_ns;
      });
  entries_.erase(oldest);
}

size_t LoginGuard::tracked() const {
  MutexLock lock(&mu_);
  return entries_.size();
}

}  // namespace skiff::server::internal
