// Committer: group commit of document writes into the store.
//
// Writers queue puts and deletes; one committer thread drains everything
// queued into one WriteBatch and one store transaction, so concurrent writes
// share a commit and throughput grows with concurrency (leveldb's
// DBImpl::Write groups writers the same way). Queue order is store order:
// callers queue a key's writes while holding that key's shard lock.
//
// In memory mode a writer may instead queue WriteLatest(table, key): the
// committer reads the document's state when it writes it, through the
// Latest function, so a document changed many times between two flushes is
// serialised and queued once, not once per change.
//
// Writes are numbered in queue order from 1. Each write's `done` (may be
// empty) runs on the committer thread, with that number, once its
// transaction committed or failed for good; written() then covers it.
// Durability kCommit: a write is tried once. kMemory: the caller
// acknowledged already, so the queue is written at least every
// `flush_interval` and a failed flush is retried (`done` runs after the
// retry succeeds), never dropped; at Stop the retries go on for
// `stop_grace`, and what still could not be written is named in Stop's
// error. backlog() tells how much acknowledged data waits, so the caller can
// refuse new writes while the store takes none. The interval, the retries,
// stop_grace and the backlog's age are read on the Clock.
// All methods are thread-safe.
#ifndef SKIFF_SERVER_INTERNAL_COMMITTER_H_
#define SKIFF_SERVER_INTERNAL_COMMITTER_H_

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/mutex.h"
#include "base/status.h"
#include "server/cluster/partition.h"
#include "server/server_options.h"
#include "store/store.h"

namespace skiff::server::internal {

// Upper bounds of the batch-size buckets (writes per committed
// transaction): one writer alone commits batches of 1, a busy server
// hundreds, memory durability up to the eager flush of 4096.
inline constexpr std::array<double, 12> kCommitBatchWritesBounds = {1,  2,   4,   8,   16,   32,
                                                                    64, 128, 256, 512, 1024, 4096};
// Upper bounds in seconds of the commit-time buckets: SQLite commits in
// tens of microseconds to milliseconds, PostgreSQL in milliseconds, and a
// statement is cancelled after 5 s.
inline constexpr std::array<double, 15> kCommitDurationBoundsSeconds = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
    0.05,   0.1,     0.25,   0.5,   1.0,    2.5,   10.0};

struct CommitterCounters {
  uint64_t transactions = 0;  // store transactions committed
  uint64_t writes = 0;        // puts and deletes queued
  uint64_t failures = 0;      // transactions that failed
  // Committed transactions by their writes (each write queued counts, a
  // key's superseded ones too), each in its own bucket (not cumulative);
  // the last entry is over the last bound.
  std::array<uint64_t, kCommitBatchWritesBounds.size() + 1> batch_writes{};
  uint64_t batch_writes_sum = 0;
  // Committed transactions by the time from taking the batch off the queue
  // to the store's commit returning, on the committer's Clock.
  std::array<uint64_t, kCommitDurationBoundsSeconds.size() + 1> duration{};
  uint64_t duration_sum_ns = 0;
};

// Writes queued or being written, not yet in the store.
struct CommitterBacklog {
  uint64_t writes = 0;
  uint64_t bytes = 0;                  // of the values handed over (WriteLatest writes count 0)
  std::chrono::nanoseconds oldest{0};  // how long the oldest has waited
  bool failing = false;                // the last attempt failed
};

class Committer {
 public:
  using Done = std::function<void(const Status& status, uint64_t seq)>;
  // The current state of (table, key) for a WriteLatest write: sets `*value`
  // (JSON text, or nullopt for "absent") and returns true, or returns false
  // when it is not known (the write is then skipped). Runs on the committer
  // thread.
  using Latest = std::function<bool(std::string_view table, std::string_view key,
                                    std::optional<std::string>* value)>;

  // `store` and `clock` must outlive the committer.
  Committer(store::Store& store, const Clock& clock, Durability durability,
            std::chrono::milliseconds flush_interval,
            std::chrono::milliseconds stop_grace = std::chrono::seconds(30));
  ~Committer();  // Stop()

  Committer(const Committer&) = delete;
  Committer& operator=(const Committer&) = delete;

  // `value` is JSON text; an empty optional deletes the key. Returns the
  // write's number. Cluster mode passes the lease the write was admitted
  // under: its transaction commits only if the key's partition is still
  // held at that epoch (WriteBatch::AddFence).
  uint64_t Write(std::string table, std::string key, std::optional<std::string> value, Done done,
                 std::optional<cluster::Lease> lease = std::nullopt);

  // Memory mode: queues a write of whatever (table, key) holds when it is
  // written (see Latest); it stands for every write of the key in its batch.
  // Returns the write's number. A caller that changes a document whose last
  // WriteLatest write is numbered above taken() need not queue anything:
  // that write has not been read yet and will carry the change, as long as
  // the caller changes the document and reads taken() under the same lock
  // the Latest function takes.
  uint64_t WriteLatest(std::string table, std::string key);
  // Set before the first WriteLatest.
  void set_latest(Latest latest) { latest_ = std::move(latest); }
  // Every write numbered up to this has been taken off the queue.
  uint64_t taken() const { return taken_through_.load(std::memory_order_acquire); }

  // Every write numbered up to this is in the store, or failed for good
  // after its `done` ran. Lets a cache tell whether an entry's last write
  // landed without a callback per write.
  uint64_t written() const { return written_through_.load(std::memory_order_acquire); }

  // Blocks until every write queued before the call has been written (or
  // failed); returns the error of the attempt that ended the wait, OK when
  // nothing was pending.
  Status Flush();

  // Writes what is queued and stops the thread. Returns an error naming
  // the writes that could not be written (memory durability, a store that
  // failed for all of stop_grace); OK otherwise. Idempotent.
  Status Stop();

  CommitterCounters counters() const;
  CommitterBacklog backlog() const;

 private:
  struct Pending {
    uint64_t seq;
    std::string table;
    std::string key;
    std::optional<std::string> value;
    Done done;
    bool latest = false;  // WriteLatest: `value` is read when written
    Clock::TimePoint queued;
    std::optional<cluster::Lease> lease;
  };

  void Run();
  // Writes `batch` as one transaction (the last write of each key). In
  // commit mode the strings of `batch` are moved out; `done` stays.
  Status Commit(std::vector<Pending>& batch);
  // Counts a committed transaction of `writes` that took `took`.
  void CountCommit(size_t writes, std::chrono::nanoseconds took) SKIFF_REQUIRES(mu_);

  store::Store& store_;
  const Clock& clock_;
  const Durability durability_;
  const std::chrono::milliseconds flush_interval_;
  const std::chrono::milliseconds stop_grace_;

  mutable Mutex mu_;
  CondVar work_cv_;     // queue grew or stopping
  CondVar flushed_cv_;  // written_seq_ advanced
  std::vector<Pending> queue_ SKIFF_GUARDED_BY(mu_);
  uint64_t queued_seq_ SKIFF_GUARDED_BY(mu_) = 0;   // writes ever queued
  uint64_t written_seq_ SKIFF_GUARDED_BY(mu_) = 0;  // writes ever written (or failed)
  Status last_status_ SKIFF_GUARDED_BY(mu_);
  uint64_t failed_attempts_ SKIFF_GUARDED_BY(mu_) = 0;
  bool stopping_ SKIFF_GUARDED_BY(mu_) = false;
  bool flush_requested_ SKIFF_GUARDED_BY(mu_) = false;
  CommitterCounters counters_ SKIFF_GUARDED_BY(mu_);
  uint64_t backlog_bytes_ SKIFF_GUARDED_BY(mu_) = 0;    // value bytes of queue_ and the batch out
  Clock::TimePoint oldest_ SKIFF_GUARDED_BY(mu_) = {};  // queue time of the oldest unwritten
  bool failing_ SKIFF_GUARDED_BY(mu_) = false;
  Status stop_status_ SKIFF_GUARDED_BY(mu_);
  std::atomic<uint64_t> written_through_{0};  // written_seq_, readable without mu_
  std::atomic<uint64_t> taken_through_{0};    // last number swapped off queue_
  Latest latest_;
  std::thread thread_;
};

}  // namespace skiff::server::internal

#endif  // SKIFF_SERVER_INTERNAL_COMMITTER_H_
