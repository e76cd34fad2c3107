// ClusterSyncLog: the sync log of a cluster instance (sync_log.h,
// docs/cluster.md "Sync across instances"): several servers, one engine
// each, on one PostgreSQL store opened in cluster mode.
//
// The store numbers each commit's changes from a counter row it locks
// (Store::CommitSync) and reads the devices' records in that same
// transaction, so ids stay gap-free in commit order across servers and a
// push retried through another server applies nothing; nothing is cached.
// After a commit, a NOTIFY (its own statement, after the pushes were
// answered) tells the other servers. A change feed thread learns of their
// commits (LISTEN, and a poll for the notifications a reconnect lost), reads
// which groups moved past what this one has seen, and publishes them to the
// engine, which wakes their waits as for a local commit.
//
// Thread-safety: as SyncLog; the change feed thread is started by Start and
// joined by Stop.
#ifndef SKIFF_SYNC_CLUSTER_SYNC_LOG_H_
#define SKIFF_SYNC_CLUSTER_SYNC_LOG_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/logger.h"
#include "base/mutex.h"
#include "store/change_listener.h"
#include "store/channel_follower.h"
#include "store/store.h"
#include "sync/sync_log.h"

namespace skiff::sync {

struct ClusterSyncLogOptions {
  // Opens the change feed's own connection (the store's URL).
  std::string store_url;
  // Off sends no NOTIFY, so other servers learn of this one's commits only
  // by their poll (tests check the poll that way).
  bool notify = true;
  // The feed catches up this often whatever the notifications do.
  std::chrono::milliseconds poll_interval{1000};
  // Where a lost change feed and failed catch-ups are reported; outlives
  // the log. Null writes them to stderr.
  Logger* logger = nullptr;
};

class ClusterSyncLog final : public SyncLog {
 public:
  // bad_request unless `store` is PostgreSQL's (opened in cluster mode, as
  // every server on the database must be); the store's error when the
  // change feed cannot listen. Listens before the engine reads the
  // committed state, so no commit after that read goes unannounced.
  static Result<std::unique_ptr<ClusterSyncLog>> Open(store::Store& store,
                                                      ClusterSyncLogOptions options);
  ~ClusterSyncLog() override;  // Stop()

  void Start(Host& host, uint64_t last) override;
  // May wait for the change feed's reconnect in progress (libpq's
  // connect_timeout).
  void Stop() override;
  Status Prepare() override { return Status::Ok(); }
  Result<uint64_t> Commit(const std::vector<std::string>& devices, const Build& build,
                          SyncBatch* built) override;
  void Committed(const SyncBatch& built, uint64_t last) override;
  void Failed() override;
  // Reads which groups have changes past what this engine has seen (one
  // statement) and publishes them.
  Status CatchUp() override;
  uint64_t catch_ups() const override { return catch_ups_.load(); }

 private:
  ClusterSyncLog(store::Store& store, ClusterSyncLogOptions options);
  uint64_t scanned() const;

  store::Store& store_;
  const ClusterSyncLogOptions options_;
  StderrLogger stderr_logger_{"skiffd"};  // when options_.logger is null
  Logger& logger_;
  std::unique_ptr<store::ChangeListener> listener_;  // until Start hands it to feed_
  Host* host_ = nullptr;                             // set by Start
  std::atomic<uint64_t> catch_ups_{0};

  mutable Mutex mu_;
  // Every change up to this id has been published to the host's groups
  // (its cursor may be ahead after a local commit that followed commits of
  // other servers not yet caught up on).
  uint64_t scanned_ SKIFF_GUARDED_BY(mu_) = 0;
  std::unique_ptr<store::ChannelFollower> feed_;  // the change feed, once started
};

}  // namespace skiff::sync

#endif  // SKIFF_SYNC_CLUSTER_SYNC_LOG_H_
