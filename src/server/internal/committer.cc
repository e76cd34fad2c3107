#include "server/internal/committer.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "base/check.h"

namespace skiff::server::internal {
namespace {

// In memory mode a queue this long is written without waiting for the
// interval, bounding memory and transaction size.
constexpr size_t kEagerFlushWrites = 4096;

}  // namespace

Committer::Committer(store::Store& store, const Clock& clock, Durability durability,
                     std::chrono::milliseconds flush_interval, std::chrono::milliseconds stop_grace)
    : store_(store),
      clock_(clock),
      durability_(durability),
      flush_interval_(flush_interval),
      stop_grace_(stop_grace) {
  thread_ = std::thread([this] { Run(); });
}

Committer::~Committer() { (void)Stop(); }

uint64_t Committer::Write(std::string table, std::string key, std::optional<std::string> value,
                          Done done, std::optional<cluster::Lease> lease) {
  const size_t bytes = value ? value->size() : 0;
  MutexLock lock(&mu_);
  ++queued_seq_;
  const Clock::TimePoint now = clock_.Now();
  if (queue_.empty() && written_seq_ + 1 == queued_seq_) oldest_ = now;
  queue_.push_back({queued_seq_, std::move(table), std::move(key), std::move(value),
                    std::move(done), false, now, lease});
  if (durability_ == Durability::kMemory) backlog_bytes_ += bytes;  // commit mode: no backlog
  ++counters_.writes;
  // Commit mode wakes the committer at once: a waiting writer is latency.
  // Memory mode lets writes pile up until the interval or a full queue.
  if (durability_ == Durability::kCommit || queue_.size() >= kEagerFlushWrites) {
    work_cv_.Signal();
  }
  return queued_seq_;
}

uint64_t Committer::WriteLatest(std::string table, std::string key) {
  SKIFF_CHECK(durability_ == Durability::kMemory && latest_);
  MutexLock lock(&mu_);
  ++queued_seq_;
  const Clock::TimePoint now = clock_.Now();
  if (queue_.empty() && written_seq_ + 1 == queued_seq_) oldest_ = now;
  queue_.push_back(
      {queued_seq_, std::move(table), std::move(key), std::nullopt, nullptr, true, now, {}});
  ++counters_.writes;
  if (queue_.size() >= kEagerFlushWrites) work_cv_.Signal();
  return queued_seq_;
}

Status Committer::Flush() {
  MutexLock lock(&mu_);
  uint64_t target = queued_seq_;
  // An old failure is not this caller's business: with nothing pending, the
  // store already holds everything applied (or those writes were failed).
  if (written_seq_ >= target) return Status::Ok();
  flush_requested_ = true;
  work_cv_.Signal();
  // A failed memory-mode flush keeps its writes for a retry; report the
  // failure rather than wait for the store to come back.
  uint64_t failures = failed_attempts_;
  while (written_seq_ < target && failed_attempts_ == failures && !stopping_) {
    flushed_cv_.Wait(mu_);
  }
  return last_status_;
}

Status Committer::Stop() {
  {
    MutexLock lock(&mu_);
    if (stopping_) return stop_status_;
    stopping_ = true;
  }
  work_cv_.Signal();
  if (thread_.joinable()) thread_.join();
  flushed_cv_.SignalAll();
  MutexLock lock(&mu_);
  return stop_status_;
}

CommitterCounters Committer::counters() const {
  MutexLock lock(&mu_);
  return counters_;
}

CommitterBacklog Committer::backlog() const {
  MutexLock lock(&mu_);
  CommitterBacklog b;
  b.writes = queued_seq_ - written_seq_;
  b.bytes = backlog_bytes_;
  if (b.writes > 0) b.oldest = clock_.Now() - oldest_;
  b.failing = failing_;
  return b;
}

void Committer::Run() {
  std::vector<Pending> batch;
  MutexLock lock(&mu_);
  // Memory mode, after a failed flush: when to try again, and at Stop how
  // long to keep trying.
  std::optional<Clock::TimePoint> retry_at;
  std::optional<Clock::TimePoint> give_up_at;
  for (;;) {
    auto ready = [&]() SKIFF_REQUIRES(mu_) {
      return stopping_ || flush_requested_ ||
             (durability_ == Durability::kCommit ? !queue_.empty()
                                                 : queue_.size() >= kEagerFlushWrites);
    };
    if (retry_at) {
      // A failing store is tried again after the interval, also while
      // stopping, instead of at once in a loop.
      while (!flush_requested_ && clock_.WaitUntil(work_cv_, mu_, *retry_at)) {
      }
      retry_at.reset();
    } else if (durability_ == Durability::kCommit) {
      while (!ready()) work_cv_.Wait(mu_);
    } else {
      const Clock::TimePoint deadline = clock_.Now() + flush_interval_;
      while (!ready() && clock_.WaitUntil(work_cv_, mu_, deadline)) {
      }
    }
    flush_requested_ = false;
    if (queue_.empty()) {
      if (stopping_) return;
      continue;
    }
    // Everything queued while the previous transaction ran goes into this
    // one: the group commit.
    batch.swap(queue_);
    // Before any Latest read of this batch (they run after the unlock).
    taken_through_.store(queued_seq_, std::memory_order_release);
    lock.Unlock();
    const Clock::TimePoint started = clock_.Now();
    Status status = Commit(batch);
    const Clock::TimePoint committed = clock_.Now();
    lock.Lock();
    failing_ = !status.ok();
    if (!status.ok() && durability_ == Durability::kMemory) {
      const Clock::TimePoint now = clock_.Now();
      if (stopping_ && !give_up_at) give_up_at = now + stop_grace_;
      if (!give_up_at || now < *give_up_at) {
        // Memory mode acknowledged these writes already: keep them, in
        // order, ahead of anything queued since, and try again.
        batch.insert(batch.end(), std::make_move_iterator(queue_.begin()),
                     std::make_move_iterator(queue_.end()));
        queue_.swap(batch);
        batch.clear();
        last_status_ = status;
        ++counters_.failures;
        ++failed_attempts_;
        flushed_cv_.SignalAll();
        retry_at = now + std::min<std::chrono::nanoseconds>(flush_interval_,
                                                            std::chrono::milliseconds(200));
        continue;
      }
      // Stopping, and the store failed for all of stop_grace: these
      // acknowledged writes are lost. Say exactly which.
      std::string named;
      for (size_t i = 0; i < batch.size() && i < 20; ++i) {
        named += (i ? ", " : "") + batch[i].table + "/" + batch[i].key;
      }
      stop_status_ =
          Status(StatusCode::kUnavailable,
                 std::to_string(batch.size()) +
                     " acknowledged writes could not be written to the store (" + status.message() +
                     "): " + named + (batch.size() > 20 ? ", ..." : ""));
    }
    if (status.ok()) {
      ++counters_.transactions;
      CountCommit(batch.size(), committed - started);
    } else {
      ++counters_.failures;
    }
    last_status_ = status;
    // Replies go out before Flush() callers wake: Server::Stop relies on it.
    lock.Unlock();
    for (Pending& p : batch) {
      if (p.done) p.done(status, p.seq);
    }
    lock.Lock();
    written_seq_ += batch.size();
    written_through_.store(written_seq_, std::memory_order_release);
    if (durability_ == Durability::kMemory) {
      for (const Pending& p : batch) backlog_bytes_ -= p.value ? p.value->size() : 0;
    }
    if (!queue_.empty()) oldest_ = queue_.front().queued;
    batch.clear();
    flushed_cv_.SignalAll();
  }
}

void Committer::CountCommit(size_t writes, std::chrono::nanoseconds took) {
  // A handful of compares per transaction, under the lock the committer
  // holds anyway: the reader copies them in counters().
  auto bucket = [](std::span<const double> bounds, double value) {
    return static_cast<size_t>(std::lower_bound(bounds.begin(), bounds.end(), value) -
                               bounds.begin());
  };
  ++counters_.batch_writes[bucket(kCommitBatchWritesBounds, static_cast<double>(writes))];
  counters_.batch_writes_sum += writes;
  const auto ns = std::max<int64_t>(0, took.count());
  ++counters_.duration[bucket(kCommitDurationBoundsSeconds, static_cast<double>(ns) / 1e9)];
  counters_.duration_sum_ns += static_cast<uint64_t>(ns);
}

Status Committer::Commit(std::vector<Pending>& batch) {
  // One write stands for each key: hot keys written many times per batch
  // cost one statement (cluster writes: see below). That is the last write
  // of the key, unless the key has a WriteLatest write in the batch: that
  // one reads the document as it is now, newer than any write queued. The
  // map holds views into `batch`, so finding the duplicates copies no
  // strings.
  struct Id {
    std::string_view table;
    std::string_view key;
    bool operator==(const Id&) const = default;
  };
  struct IdHash {
    size_t operator()(const Id& id) const {
      return std::hash<std::string_view>{}(id.key) * 31 + std::hash<std::string_view>{}(id.table);
    }
  };
  std::vector<bool> superseded(batch.size(), true);
  {
    std::unordered_map<Id, size_t, IdHash> standing;
    standing.reserve(batch.size());
    for (size_t i = batch.size(); i-- > 0;) {
      auto [it, fresh] = standing.try_emplace(Id{batch[i].table, batch[i].key}, i);
      if (!fresh && batch[i].latest && !batch[it->second].latest) it->second = i;
    }
    for (const auto& [id, i] : standing) superseded[i] = false;
  }  // the views die before the strings are moved
  // Commit mode moves the strings into the WriteBatch: each write is tried
  // once, and its done callback keeps what it needs. Memory mode copies
  // them, since a failed flush is queued again for a retry.
  const bool move = durability_ == Durability::kCommit;
  auto take = [move](std::string& s) -> std::string {
    if (move) return std::move(s);
    return s;
  };
  store::WriteBatch write;
  for (size_t i = 0; i < batch.size(); ++i) {
    Pending& p = batch[i];
    // Cluster writes keep the superseded ones: the store folds them for the
    // documents and logs each for watches across instances, so a watcher
    // sees every value a key took (docs/cluster.md, "watch across
    // instances"). Commit durability only, where values are never read
    // later (no WriteLatest).
    if (superseded[i] && !p.lease) continue;
    if (p.lease) {
      write.AddFence({cluster::PartitionOf(p.table, p.key), p.lease->owner, p.lease->epoch});
    }
    if (p.latest) {
      // Read now, not when queued: this is the state after every change
      // made so far. A retry reads it again.
      std::optional<std::string> value;
      if (!latest_(p.table, p.key, &value)) continue;
      if (value) {
        write.Put(p.table, p.key, std::move(*value));
      } else {
        write.Delete(p.table, p.key);
      }
    } else if (p.value) {
      write.Put(take(p.table), take(p.key), take(*p.value));
    } else {
      write.Delete(take(p.table), take(p.key));
    }
  }
  return store_.Write(write);
}

}  // namespace skiff::server::internal
