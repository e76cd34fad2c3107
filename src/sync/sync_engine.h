// SyncEngine: push, pull, bootstrap and held waits over a Store.
//
// Sync ids come from the engine's commit pipeline, never from a row locked
// until commit: one committer thread drains every queued push into one store
// transaction, numbering their changes as it builds the batch, so concurrent
// pushes share a commit and ids increase in commit order with no gaps a pull
// could skip. Pushes are idempotent by (device, seq): the device's last
// applied seq is written in the same transaction as its changes.
//
// A held wait costs no SQL: the engine keeps each group's last sync id in
// memory and wakes the waits of the groups a commit touched.
//
// Where the ids start and how a batch reaches the store is the engine's
// SyncLog (sync_log.h), given at Start: LocalSyncLog for one server alone on
// its store (the default), ClusterSyncLog for a cluster instance, which also
// learns of the other servers' commits and publishes them here.
//
// Thread-safe. Callbacks run on the committer thread (push replies, woken
// waits), the log's threads (waits woken by other servers' commits), the
// expiry thread (timed-out waits) or the caller's thread (a wait answered at
// once); they must be quick and must not call back into the engine while
// holding locks of their own that the engine's callers hold.
#ifndef SKIFF_SYNC_SYNC_ENGINE_H_
#define SKIFF_SYNC_SYNC_ENGINE_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/logger.h"
#include "base/mutex.h"
#include "base/status.h"
#include "store/store.h"
#include "sync/sync_log.h"
#include "sync/types.h"
#include "sync/wait_registry.h"

namespace skiff::sync {

struct SyncOptions {
  size_t max_changes_per_push = 1000;
  // One commit takes queued pushes up to this many changes (at least one
  // push), so a burst never becomes one unbounded transaction.
  size_t max_changes_per_commit = 10000;
  size_t max_page = 10000;  // pull and bootstrap limits
  std::chrono::milliseconds max_wait{60000};
  // Runs a thread that answers waits at their deadline. Tests that drive a
  // ManualClock turn it off and call ExpireDueWaits().
  bool expiry_thread = true;

  // Where the engine reports failed commits; it must outlive the engine.
  // Null writes them to stderr.
  Logger* logger = nullptr;
};

struct SyncCounters {
  uint64_t pushes = 0;           // push requests answered OK
  uint64_t changes_applied = 0;  // changes given a sync id
  uint64_t changes_skipped = 0;  // retried changes already applied
  uint64_t commits = 0;          // store transactions of the committer
  uint64_t waits_answered_at_once = 0;
  uint64_t waits_woken = 0;
  uint64_t waits_expired = 0;
  uint64_t waits_held = 0;  // held right now
  uint64_t catch_ups = 0;   // the log's reads of the groups other servers moved
};

class SyncEngine : private SyncLog::Host {
 public:
  using PushDone = std::function<void(Result<PushReply>)>;
  using WaitDone = std::function<void(Result<WaitReply>)>;
  using WaitId = WaitRegistry::WaitId;

  // Reads the last sync id (overall and per group) and starts the threads
  // and the log's. `log` null: a LocalSyncLog on `store`.
  static Result<std::unique_ptr<SyncEngine>> Start(store::Store& store, const Clock& clock,
                                                   SyncOptions options = {},
                                                   std::unique_ptr<SyncLog> log = nullptr);
  ~SyncEngine();  // Stop()
  SyncEngine(const SyncEngine&) = delete;
  SyncEngine& operator=(const SyncEngine&) = delete;

  // Commits what is queued, answers held waits (changed: false), stops
  // the threads and the log's (ClusterSyncLog::Stop may wait). Idempotent.
  void Stop();

  // Blocks until every push queued before the call has been committed and
  // answered. The server calls it before closing connections, so queued
  // pushes still get their replies.
  void Flush();

  // Validates at once (bad_request, forbidden for a group the caller is not
  // in, too_large) and queues the push; `done` runs after the transaction
  // holding it committed, or with its error.
  void Push(const Caller& caller, PushRequest request, PushDone done);

  // Changes after `since` in the caller's groups, at most `limit`.
  // bad_request when `since` is ahead of the server. A `since` ahead of this
  // engine (another server's cursor) is first checked by the log
  // (SyncLog::CatchUp), as it is in Wait.
  Result<PullReply> Pull(const Caller& caller, uint64_t since, size_t limit);

  // A page of the caller's current rows after `after`, and the cursor to
  // pull from once the last page is in.
  Result<BootstrapReply> Bootstrap(const Caller& caller, const store::SyncRowCursor& after,
                                   size_t limit);

  // Answers at once when a change in the caller's groups passed `since`;
  // otherwise holds until one commits (changed) or `timeout` (not changed).
  // Returns the wait's id (0 when answered at once) for CancelWait.
  WaitId Wait(const Caller& caller, uint64_t since, std::chrono::milliseconds timeout,
              WaitDone done);
  // Drops a held wait without answering (its connection is gone).
  void CancelWait(WaitId id);
  // Answers the waits whose deadline passed (the expiry thread calls it).
  void ExpireDueWaits();

  // The highest committed sync id.
  uint64_t cursor() const override;
  SyncCounters counters() const;

 private:
  struct QueuedPush {
    Caller caller;
    PushRequest request;
    PushDone done;
  };

  SyncEngine(store::Store& store, const Clock& clock, SyncOptions options,
             std::unique_ptr<SyncLog> log);
  Status ValidatePush(const Caller& caller, const PushRequest& request) const;
  void CommitLoop();
  // Builds one batch of `pushes` through the log, commits it, publishes it
  // and answers the pushes (or, after a failure, retries or fails them).
  void CommitQueued(std::vector<QueuedPush>& pushes);
  // Numbers the changes of `pushes` from built->next_id, skipping the seqs
  // a device applied before.
  static void BuildBatch(std::vector<QueuedPush>& pushes, const SyncLog::DeviceLookup& lookup,
                         SyncBatch* built);
  // After a failed commit: a refused push's batch is committed again without
  // it (true), else every push gets the error.
  bool RetryAlone(std::vector<QueuedPush>& pushes, const Status& committed);
  static void AnswerFailed(std::vector<QueuedPush>& pushes, const SyncBatch& built,
                           const Status& committed);
  // After a commit whose last id is `last`: publishes it, wakes the waits
  // of the groups it moved, answers the pushes.
  void Publish(std::vector<QueuedPush>& pushes, SyncBatch& built, uint64_t last);
  // SyncLog::Host: what the log learned was committed.
  void Advance(uint64_t last, const std::map<std::string, uint64_t>& groups) override;
  // Raises the groups' last ids; returns the waits of those that moved.
  std::vector<WaitRegistry::Callback> AdvanceGroups(const std::map<std::string, uint64_t>& groups)
      SKIFF_REQUIRES(mu_);
  void ExpiryLoop();

  store::Store& store_;
  const Clock& clock_;
  const SyncOptions options_;
  StderrLogger stderr_logger_{"skiffd"};  // when options_.logger is null
  Logger& logger_;
  const std::unique_ptr<SyncLog> log_;

  mutable Mutex mu_;
  uint64_t cursor_ SKIFF_GUARDED_BY(mu_) = 0;
  std::map<std::string, uint64_t> group_last_ SKIFF_GUARDED_BY(mu_);
  WaitRegistry waits_ SKIFF_GUARDED_BY(mu_);
  SyncCounters counters_ SKIFF_GUARDED_BY(mu_);
  std::vector<QueuedPush> queue_ SKIFF_GUARDED_BY(mu_);
  bool stopping_ SKIFF_GUARDED_BY(mu_) = false;
  bool committing_ SKIFF_GUARDED_BY(mu_) = false;  // a batch is out
  CondVar queue_cv_;
  CondVar idle_cv_;  // queue empty and nothing committing
  CondVar expiry_cv_;

  Mutex stop_mu_;  // held for the whole of Stop()

  std::thread committer_;
  std::thread expiry_;
};

}  // namespace skiff::sync

#endif  // SKIFF_SYNC_SYNC_ENGINE_H_
