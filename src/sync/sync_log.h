// SyncLog: where the sync engine's ids come from and how one batch of
// queued pushes reaches the store, chosen once, when the engine is built.
//
// The engine owns the queue, the published cursor and group ids, and the
// held waits; it builds each batch (the numbering of its changes, the seqs a
// device applied before) from what its log gives it. The log owns the rest:
// - LocalSyncLog (local_sync_log.h), one server on the store: ids follow the
//   engine's cursor, a device's record is read once and then cached, a
//   batch is one statement (Store::Write);
// - ClusterSyncLog (cluster_sync_log.h), several servers on one PostgreSQL:
//   ids from the store's counter, the devices' records read in the commit's
//   transaction, a NOTIFY after it, and a change feed thread that learns of
//   the other servers' commits.
//
// Thread-safety: the engine calls Prepare, Commit, Committed and Failed on
// its committer thread only, CatchUp from any thread, Start and Stop once
// each. A log publishes what it learns through its Host (the engine), which
// is thread-safe.
#ifndef SKIFF_SYNC_SYNC_LOG_H_
#define SKIFF_SYNC_SYNC_LOG_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "store/store.h"
#include "sync/types.h"

namespace skiff::sync {

// A device's record before the batch being built.
struct DeviceState {
  std::string user;
  uint64_t last_seq = 0;
};

// One commit's batch and what it will answer.
struct SyncBatch {
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

class SyncLog {
 public:
  // A device's record before the batch (nullopt: never seen), or the
  // store's error reading it.
  using DeviceLookup = std::function<Result<std::optional<DeviceState>>(const std::string& device)>;
  // Builds the batch afresh into *built, its changes numbered from
  // `first_id`; the engine's, called from Commit (maybe more than once,
  // when the store runs the commit again).
  using Build =
      std::function<void(uint64_t first_id, const DeviceLookup& lookup, SyncBatch* built)>;

  // The engine, as its log sees it. Thread-safe.
  class Host {
   public:
    // The highest id published.
    virtual uint64_t cursor() const = 0;
    // Every change up to `last` is committed, each group of `groups` up to
    // its id: raises the cursor and the groups' ids (never lowers them) and
    // answers the waits of the groups that moved.
    virtual void Advance(uint64_t last, const std::map<std::string, uint64_t>& groups) = 0;

   protected:
    virtual ~Host() = default;
  };

  virtual ~SyncLog() = default;

  // Once the engine has read the committed state (its last id `last`):
  // starts what runs beside the committer. `host` outlives Stop.
  virtual void Start(Host& host, uint64_t last) = 0;
  // Stops what Start started. Idempotent.
  virtual void Stop() = 0;

  // Before a batch is built: an error answers every push of it.
  virtual Status Prepare() = 0;
  // Numbers and commits the batch `build` makes (`devices`: the distinct
  // devices of its pushes). Returns the commit's last id (the cursor when
  // nothing was written), or the store's error, after which the batch may
  // or may not have landed.
  virtual Result<uint64_t> Commit(const std::vector<std::string>& devices, const Build& build,
                                  SyncBatch* built) = 0;
  // After a commit whose last id is `last` was published and its pushes
  // answered.
  virtual void Committed(const SyncBatch& built, uint64_t last) = 0;
  // After a failed commit: publishes whatever of it landed.
  virtual void Failed() = 0;

  // A cursor ahead of the engine's: learns of commits it has not seen
  // (published through the host). Ok when there is nothing to learn.
  virtual Status CatchUp() = 0;
  // Reads of the store that CatchUp and the change feed made.
  virtual uint64_t catch_ups() const = 0;
};

}  // namespace skiff::sync

#endif  // SKIFF_SYNC_SYNC_LOG_H_
