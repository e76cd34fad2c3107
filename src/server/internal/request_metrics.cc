#include "server/internal/request_metrics.h"

#include <thread>

namespace skiff::server::internal {
namespace {

// The bounds in nanoseconds, for the hot path's comparisons.
constexpr std::array<int64_t, kLatencyBoundsSeconds.size()> BoundsNs() {
  std::array<int64_t, kLatencyBoundsSeconds.size()> ns{};
  for (size_t i = 0; i < ns.size(); ++i) {
    ns[i] = static_cast<int64_t>(kLatencyBoundsSeconds[i] * 1e9 + 0.5);
  }
  return ns;
}
constexpr std::array<int64_t, kLatencyBoundsSeconds.size()> kBoundsNs = BoundsNs();

}  // namespace

OpClass ClassOf(Op op) {
  switch (op) {
    case Op::kGet:
    case Op::kHas:
    case Op::kAll:
    case Op::kNear:
    case Op::kWatch:
    case Op::kUnwatch:
      return OpClass::kRead;
    case Op::kSet:
    case Op::kDelete:
    case Op::kAdd:
    case Op::kMerge:
      return OpClass::kWrite;
    case Op::kPush:
    case Op::kPull:
    case Op::kBootstrap:
    case Op::kWait:
      return OpClass::kSync;
    case Op::kLogin:
    case Op::kLogout:
      return OpClass::kSession;
    case Op::kPing:
    case Op::kEcho:
    case Op::kStats:
      return OpClass::kOther;
  }
  return OpClass::kOther;
}

std::string_view OpClassName(OpClass c) {
  static constexpr std::array<std::string_view, kOpClassCount> kNames = {"read", "write", "sync",
                                                                         "session", "other"};
  return kNames[static_cast<size_t>(c)];
}

std::string_view LimitReasonName(LimitReason reason) {
  static constexpr std::array<std::string_view, kLimitReasonCount> kNames = {
      "user_rate", "user_connections", "failed_logins"};
  return kNames[static_cast<size_t>(reason)];
}

struct RequestMetrics::Shard {
  std::thread::id owner;
  std::array<std::array<std::atomic<uint64_t>, kStatusCodeCount>, kOpCount> counts{};
  std::array<std::array<std::atomic<uint64_t>, kLatencyBoundsSeconds.size() + 1>, kOpClassCount>
      buckets{};
  std::array<std::atomic<uint64_t>, kOpClassCount> sum_ns{};
};

namespace {

std::atomic<uint64_t> next_generation{1};

// The single writer's increment: a relaxed load and store, which readers
// may see before or after, never torn.
void Bump(std::atomic<uint64_t>& counter, uint64_t by = 1) {
  counter.store(counter.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
}

}  // namespace

RequestMetrics::RequestMetrics() : generation_(next_generation.fetch_add(1)) {}
RequestMetrics::~RequestMetrics() = default;

RequestMetrics::Shard& RequestMetrics::ShardOfThisThread() {
  // The shard this thread last used, and whose: a generation, never an
  // address, so a new instance where an old one was is not mistaken for it.
  thread_local uint64_t cached_generation = 0;
  thread_local Shard* cached = nullptr;
  if (cached_generation == generation_) return *cached;
  const std::thread::id me = std::this_thread::get_id();
  MutexLock lock(&mu_);
  Shard* found = nullptr;
  for (const std::unique_ptr<Shard>& shard : shards_) {
    if (shard->owner == me) found = shard.get();
  }
  if (found == nullptr) {
    shards_.push_back(std::make_unique<Shard>());
    found = shards_.back().get();
    found->owner = me;
  }
  cached_generation = generation_;
  cached = found;
  return *found;
}

void RequestMetrics::Record(Op op, StatusCode outcome, std::chrono::nanoseconds latency) {
  Shard& shard = ShardOfThisThread();
  Bump(shard.counts[static_cast<size_t>(op)][static_cast<size_t>(outcome)]);
  const int64_t ns = latency.count() > 0 ? latency.count() : 0;
  size_t bucket = 0;
  while (bucket < kBoundsNs.size() && ns > kBoundsNs[bucket]) ++bucket;
  const size_t c = static_cast<size_t>(ClassOf(op));
  Bump(shard.buckets[c][bucket]);
  Bump(shard.sum_ns[c], static_cast<uint64_t>(ns));
}

uint64_t RequestMetrics::requests(Op op, StatusCode outcome) const {
  uint64_t n = 0;
  MutexLock lock(&mu_);
  for (const std::unique_ptr<Shard>& shard : shards_) {
    n += shard->counts[static_cast<size_t>(op)][static_cast<size_t>(outcome)].load(
        std::memory_order_relaxed);
  }
  return n;
}

LatencyHistogram RequestMetrics::latency(OpClass c) const {
  LatencyHistogram out;
  MutexLock lock(&mu_);
  for (const std::unique_ptr<Shard>& shard : shards_) {
    for (size_t i = 0; i < out.counts.size(); ++i) {
      out.counts[i] += shard->buckets[static_cast<size_t>(c)][i].load(std::memory_order_relaxed);
    }
    out.sum_ns += shard->sum_ns[static_cast<size_t>(c)].load(std::memory_order_relaxed);
  }
  return out;
}

}  // namespace skiff::server::internal
