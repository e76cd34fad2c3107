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
// Cluster mode (several servers, one engine each, on one PostgreSQL store
// opened in cluster mode): the store numbers each commit's changes from a
// counter row it locks (Store::CommitSync) and reads the devices' records in
// that same transaction, so ids stay gap-free in commit order across servers
// and a push retried through another server applies nothing. A change feed
// thread learns of other servers' commits (LISTEN, and a poll for the
// notifications a reconnect lost), reads which groups moved past the cursor
// and wakes their waits, as a local commit does.
//
// Thread-safe. Callbacks run on the committer thread (push replies, woken
// waits), the change feed thread (waits woken by other servers' commits),
// the expiry thread (timed-out waits) or the caller's thread (a wait
// answered at once); they must be quick and must not call back into the
// engine while holding locks of their own that the engine's callers hold.
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
#include "base/mutex.h"
#include "base/status.h"
#include "store/change_listener.h"
#include "store/store.h"
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

  // Cluster mode (see above), for a store opened with OpenOptions::cluster
  // (every server on the database must number the same way). `store_url`
  // opens the change feed's own connection. `notify` off sends no NOTIFY, so other servers learn of
  // this one's commits only by their poll (tests check the poll that way). The poll catches up this
  // often whatever the notifications do.
  bool cluster = false;
  std::string store_url;
  bool notify = true;
  std::chrono::milliseconds poll_interval{1000};
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
  uint64_t catch_ups = 0;   // cluster: reads of the groups other servers moved
};

class SyncEngine {
 public:
  using PushDone = std::function<void(Result<PushReply>)>;
  using WaitDone = std::function<void(Result<WaitReply>)>;
  using WaitId = WaitRegistry::WaitId;

  // Reads the last sync id (overall and per group) and starts the threads.
  static Result<std::unique_ptr<SyncEngine>> Start(store::Store& store, const Clock& clock,
                                                   SyncOptions options = {});
  ~SyncEngine();  // Stop()
  SyncEngine(const SyncEngine&) = delete;
  SyncEngine& operator=(const SyncEngine&) = delete;

  // Commits what is queued, answers held waits (changed: false), stops
  // the threads. Idempotent. In cluster mode it may wait for the change
  // feed's reconnect in progress (libpq's connect_timeout).
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
  // bad_request when `since` is ahead of the server. In cluster mode a
  // `since` ahead of this engine (another server's cursor) is first checked
  // against the store (one statement), as it is in Wait.
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
  uint64_t cursor() const;
  SyncCounters counters() const;

 private:
  struct QueuedPush {
    Caller caller;
    PushRequest request;
    PushDone done;
  };
  struct DeviceState {
    std::string user;
    uint64_t last_seq = 0;
  };
  // One commit's batch and what it will answer.
  struct Built {
    store::WriteBatch batch;
    std::vector<Result<PushReply>> results;  // one per push, in order
    std::map<std::string, DeviceState> touched_devices;
    std::map<std::string, uint64_t> touched_groups;  // group -> its last id in the batch
    uint64_t first_id = 0;                           // the id of the batch's first change
    uint64_t next_id = 0;
    uint64_t applied = 0;
    uint64_t skipped = 0;
    bool wrote = false;  // the batch was not empty
  };
  // A device's state before the batch being built (user: the caller's, for
  // a device never seen).
  using DeviceLookup = std::function<Result<DeviceState>(const QueuedPush&)>;

  SyncEngine(store::Store& store, const Clock& clock, SyncOptions options);
  Status ValidatePush(const Caller& caller, const PushRequest& request) const;
  void CommitLoop();
  void CommitQueued(std::vector<QueuedPush>& pushes);
  void CommitClustered(std::vector<QueuedPush>& pushes);
  // Numbers the changes of `pushes` from built->next_id, skipping the seqs
  // a device applied before.
  static void BuildBatch(std::vector<QueuedPush>& pushes, const DeviceLookup& lookup, Built* built);
  // After a failed commit: a refused push's batch is committed again without
  // it (true), else every push gets the error.
  bool RetryAlone(std::vector<QueuedPush>& pushes, const Status& committed);
  static void AnswerFailed(std::vector<QueuedPush>& pushes, const Built& built,
                           const Status& committed);
  // After a commit whose last id is `last`: publishes it, wakes the waits
  // of the groups it moved, answers the pushes.
  void Publish(std::vector<QueuedPush>& pushes, Built& built, uint64_t last);
  // Raises the groups' last ids; returns the waits of those that moved.
  std::vector<WaitRegistry::Callback> AdvanceGroups(const std::map<std::string, uint64_t>& groups)
      SKIFF_REQUIRES(mu_);
  // Cluster: reads which groups have changes past what this engine has seen
  // and publishes them (cursor, group ids, woken waits).
  Status CatchUp();
  void FeedLoop();
  // Re-reads the committed state from the store after a failed commit (an
  // outcome_unknown one may have landed): publishes what landed and wakes
  // its waits. Whether our batch landed is the store's answer, never
  // inferred from the cursor, which another writer's commit can move too.
  Status Resync();
  void ExpiryLoop();

  store::Store& store_;
  const Clock& clock_;
  const SyncOptions options_;

  mutable Mutex mu_;
  uint64_t cursor_ SKIFF_GUARDED_BY(mu_) = 0;
  std::map<std::string, uint64_t> group_last_ SKIFF_GUARDED_BY(mu_);
  WaitRegistry waits_ SKIFF_GUARDED_BY(mu_);
  SyncCounters counters_ SKIFF_GUARDED_BY(mu_);
  std::vector<QueuedPush> queue_ SKIFF_GUARDED_BY(mu_);
  // Cluster: every change up to this id is reflected in group_last_ (the
  // cursor may be ahead of it after a local commit that followed commits of
  // other servers not yet caught up on).
  uint64_t scanned_ SKIFF_GUARDED_BY(mu_) = 0;
  bool stopping_ SKIFF_GUARDED_BY(mu_) = false;
  bool committing_ SKIFF_GUARDED_BY(mu_) = false;  // a batch is out
  CondVar queue_cv_;
  CondVar idle_cv_;  // queue empty and nothing committing
  CondVar expiry_cv_;
  CondVar feed_cv_;

  // Owned by the committer thread.
  std::map<std::string, DeviceState, std::less<>> devices_;
  bool needs_resync_ = false;

  Mutex stop_mu_;  // held for the whole of Stop()

  std::unique_ptr<store::ChangeListener> listener_;  // cluster only; used by feed_

  std::thread committer_;
  std::thread expiry_;
  std::thread feed_;
};

}  // namespace skiff::sync

#endif  // SKIFF_SYNC_SYNC_ENGINE_H_
