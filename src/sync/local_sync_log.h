// LocalSyncLog: the sync log of one server alone on its store (sync_log.h).
//
// Ids follow the engine's published cursor: no other writer numbers
// changes, so the next commit's first id is the cursor plus one and a batch
// is one statement (Store::Write), in autocommit. A device's record is read
// once per server start and then cached (every later change of it goes
// through this engine). After a failed commit, which may have landed, the
// committed state is read again before anything is numbered, and the cache
// is dropped.
//
// Thread-safety: as SyncLog; everything but CatchUp and catch_ups runs on the
// engine's committer thread.
#ifndef SKIFF_SYNC_LOCAL_SYNC_LOG_H_
#define SKIFF_SYNC_LOCAL_SYNC_LOG_H_

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "store/store.h"
#include "sync/sync_log.h"

namespace skiff::sync {

class LocalSyncLog final : public SyncLog {
 public:
  explicit LocalSyncLog(store::Store& store) : store_(store) {}

  void Start(Host& host, uint64_t last) override;
  void Stop() override {}
  Status Prepare() override;
  Result<uint64_t> Commit(const std::vector<std::string>& devices, const Build& build,
                          SyncBatch* built) override;
  void Committed(const SyncBatch& built, uint64_t last) override;
  void Failed() override;
  // Every commit is this engine's: there is never anything to learn.
  Status CatchUp() override { return Status::Ok(); }
  uint64_t catch_ups() const override { return 0; }

 private:
  // Re-reads the committed state and publishes what landed. Whether our
  // batch landed is the store's answer, never inferred from the cursor,
  // which another writer's commit can move too.
  Status Resync();

  store::Store& store_;
  Host* host_ = nullptr;  // set by Start
  // Owned by the committer thread.
  std::map<std::string, DeviceState, std::less<>> devices_;
  bool needs_resync_ = false;
};

}  // namespace skiff::sync

#endif  // SKIFF_SYNC_LOCAL_SYNC_LOG_H_
