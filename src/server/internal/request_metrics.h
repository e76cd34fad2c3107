// RequestMetrics: what /metrics counts of the requests themselves: each
// request by op and outcome (ok, or its error code), its latency in a
// histogram per class of op, and the refusals of the per-user and
// per-address limits.
//
// Record() is called once per request, where the handler decides its
// reply, from every I/O thread and store worker: each thread counts in a
// shard of its own (plain relaxed loads and stores, no lock and no
// read-modify-write), taken under the mutex on its first request only.
// Reads add the shards up; they are not a snapshot across counters (each
// is exact on its own). Thread-safe.
#ifndef SKIFF_SERVER_INTERNAL_REQUEST_METRICS_H_
#define SKIFF_SERVER_INTERNAL_REQUEST_METRICS_H_

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "base/mutex.h"
#include "base/status.h"
#include "server/internal/wire/request.h"

namespace skiff::server::internal {

// Latency buckets' upper bounds in seconds: skiffd answers a request in
// memory in microseconds and one that waits for the store in milliseconds,
// so the buckets run from 10 us to 1 s, about three to a decade.
inline constexpr std::array<double, 15> kLatencyBoundsSeconds = {
    0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025,
    0.005,   0.01,     0.025,   0.05,   0.1,     0.25,   1.0};

// Classes of op for the latency histogram: ops of one class cost alike.
enum class OpClass { kRead, kWrite, kSync, kSession, kOther };
inline constexpr size_t kOpClassCount = 5;
OpClass ClassOf(Op op);
std::string_view OpClassName(OpClass c);

// Why a limit refused a request (rate_limited).
enum class LimitReason { kUserRate, kUserConnections, kFailedLogins };
inline constexpr size_t kLimitReasonCount = 3;
std::string_view LimitReasonName(LimitReason reason);

inline constexpr size_t kStatusCodeCount = static_cast<size_t>(StatusCode::kRateLimited) + 1;

struct LatencyHistogram {
  std::array<uint64_t, kLatencyBoundsSeconds.size() + 1> counts{};  // not cumulative
  uint64_t sum_ns = 0;
};

class RequestMetrics {
 public:
  RequestMetrics();
  ~RequestMetrics();
  RequestMetrics(const RequestMetrics&) = delete;
  RequestMetrics& operator=(const RequestMetrics&) = delete;

  // One request answered: its op, its outcome, and how long the handler
  // took to decide it.
  void Record(Op op, StatusCode outcome, std::chrono::nanoseconds latency);
  void RecordRefusal(LimitReason reason) {
    refusals_[static_cast<size_t>(reason)].fetch_add(1, std::memory_order_relaxed);
  }
  void RecordFailedLogin() { failed_logins_.fetch_add(1, std::memory_order_relaxed); }

  uint64_t requests(Op op, StatusCode outcome) const;
  LatencyHistogram latency(OpClass c) const;
  uint64_t refusals(LimitReason reason) const {
    return refusals_[static_cast<size_t>(reason)].load(std::memory_order_relaxed);
  }
  uint64_t failed_logins() const { return failed_logins_.load(std::memory_order_relaxed); }

 private:
  // The counts of one thread: it alone writes them (a relaxed load and
  // store, no read-modify-write), readers add up every thread's.
  struct Shard;
  Shard& ShardOfThisThread();

  const uint64_t generation_;  // tells this instance from an earlier one at the same address
  mutable Mutex mu_;
  std::vector<std::unique_ptr<Shard>> shards_ SKIFF_GUARDED_BY(mu_);
  std::array<std::atomic<uint64_t>, kLimitReasonCount> refusals_{};
  std::atomic<uint64_t> failed_logins_{0};
};

}  // namespace skiff::server::internal

#endif  // SKIFF_SERVER_INTERNAL_REQUEST_METRICS_H_
