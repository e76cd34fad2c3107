#include "sync/cluster_sync_log.h"

#include <algorithm>
#include <utility>

namespace skiff::sync {

ClusterSyncLog::ClusterSyncLog(store::Store& store, ClusterSyncLogOptions options)
    : store_(store),
      options_(std::move(options)),
      logger_(options_.logger != nullptr ? *options_.logger : stderr_logger_) {}

Result<std::unique_ptr<ClusterSyncLog>> ClusterSyncLog::Open(store::Store& store,
                                                             ClusterSyncLogOptions options) {
  if (store.kind() != "postgres") {
    return BadRequest("cluster mode needs PostgreSQL: the sync engine's store is " +
                      std::string(store.kind()));
  }
  std::unique_ptr<ClusterSyncLog> log(new ClusterSyncLog(store, std::move(options)));
  SKIFF_ASSIGN_OR_RETURN(log->listener_, store::ChangeListener::Open(log->options_.store_url));
  return log;
}

ClusterSyncLog::~ClusterSyncLog() { Stop(); }

void ClusterSyncLog::Start(Host& host, uint64_t last) {
  host_ = &host;
  {
    // No other thread sees the log yet; the lock is for the analysis.
    MutexLock lock(&mu_);
    scanned_ = last;
  }
  store::ChannelFollower::Hooks hooks;
  hooks.is_new = [this](uint64_t named) { return named > scanned(); };
  hooks.read = [this] { return CatchUp(); };
  feed_ = std::make_unique<store::ChannelFollower>(std::move(listener_), options_.poll_interval,
                                                   logger_, "sync", "other servers' commits",
                                                   std::move(hooks));
  feed_->Start();
}

void ClusterSyncLog::Stop() {
  if (feed_) feed_->Stop();
}

uint64_t ClusterSyncLog::scanned() const {
  MutexLock lock(&mu_);
  return scanned_;
}

// The store numbers the batch from its counter, under the counter's lock,
// with the devices' records read in the same transaction: nothing of
// another server's commits can be stale here, so nothing is cached.
Result<uint64_t> ClusterSyncLog::Commit(const std::vector<std::string>& devices, const Build& build,
                                        SyncBatch* built) {
  return store_.CommitSync(
      devices,
      [&](uint64_t counter, const std::map<std::string, store::DeviceSeq, std::less<>>& records,
          store::WriteBatch* batch) {
        build(
            counter + 1,
            [&records](const std::string& device) -> Result<std::optional<DeviceState>> {
              using Found = std::optional<DeviceState>;
              auto it = records.find(device);
              if (it == records.end()) return Found();
              return Found(DeviceState{it->second.user, it->second.last_seq});
            },
            built);
        std::swap(*batch, built->batch);
      });
}

void ClusterSyncLog::Committed(const SyncBatch& built, uint64_t last) {
  {
    MutexLock lock(&mu_);
    // Ids before this batch's may be other servers' commits not yet read.
    if (built.first_id <= scanned_ + 1) scanned_ = std::max(scanned_, last);
  }
  // After the pushes were answered, which need not wait for it, and after
  // the scan moved: this engine's own notification then costs no read.
  if (options_.notify && built.applied > 0) {
    // A lost notification only delays the other servers until their poll:
    // the push has committed.
    if (Status s = store_.NotifySync(last); !s.ok()) {
      Logf(logger_, LogLevel::kWarning, "sync", "NOTIFY after sync commit %llu failed: %s",
           static_cast<unsigned long long>(last), s.ToString().c_str());
    }
  }
}

void ClusterSyncLog::Failed() {
  // An outcome_unknown commit may have landed: publish what did. The
  // numbering needs nothing: the next commit reads the counter again.
  if (Status s = CatchUp(); !s.ok()) {
    Logf(logger_, LogLevel::kError, "sync", "catching up after it failed too: %s",
         s.ToString().c_str());
  }
}

Status ClusterSyncLog::CatchUp() {
  const uint64_t after = scanned();
  SKIFF_ASSIGN_OR_RETURN(auto by_group, store_.LastSyncIdByGroupSince(after));
  // Cluster commits are gap-free in commit order: what a read sees is every
  // change up to its highest id.
  uint64_t top = after;
  for (const auto& [group, id] : by_group) top = std::max(top, id);
  // Counted before the waits it wakes are answered: whoever sees such a
  // wake sees the read counted.
  catch_ups_.fetch_add(1);
  host_->Advance(top, by_group);
  {
    // After the host has them: the scan never claims groups it lacks.
    MutexLock lock(&mu_);
    scanned_ = std::max(scanned_, top);
  }
  return Status::Ok();
}

}  // namespace skiff::sync
