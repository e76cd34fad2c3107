// Replica: a device's rows and its outbox of writes the server has not
// confirmed, kept on a DeviceStorage, with the rows served from memory. It
// knows nothing of the wire or of threads: the sync loop (sync_loop.h) feeds
// it the server's rows and takes its outbox to push.
//
// Server rows apply under the pending outbox: a row with a local write the
// server has not confirmed keeps the local value, so a device's own writes
// stay visible until the server confirms or overrides them.
//
// Thread-safe: every member runs under `mu_`, and the storage is used only
// under it.
#ifndef SKIFF_CLIENT_INTERNAL_REPLICA_H_
#define SKIFF_CLIENT_INTERNAL_REPLICA_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/mutex.h"
#include "base/status.h"
#include "client/device_storage.h"
#include "client/internal/row_table.h"

namespace skiff::client::internal {

class Replica {
 public:
  explicit Replica(DeviceStorage& storage) : storage_(storage) {}
  Replica(const Replica&) = delete;
  Replica& operator=(const Replica&) = delete;

  // Reads the rows, the outbox and the sync position from the storage; the
  // storage's error when it cannot be read.
  Status Load();

  // The row's JSON text, or nullopt when there is no such row.
  std::optional<std::string> Get(const RowName& name) const;
  // The rows of one table of one group, in key order.
  std::vector<StoredRow> Scan(std::string_view group, std::string_view table) const;
  size_t row_count() const;

  // Sets (nullopt: deletes) a row locally and appends the change to the
  // outbox, in one storage transaction. bad_request for an invalid name; the
  // storage's error, with nothing changed, when it fails.
  Status Write(const RowName& name, std::optional<std::string> value);

  size_t outbox_size() const;
  // Copies of the oldest `max` outbox entries, in seq order.
  std::vector<OutboxEntry> Outbox(size_t max) const;
  // Drops the outbox entries with seq <= `last_seq` (the server has them or
  // refused them for good). The number dropped; the storage's error, with
  // the outbox unchanged, when it fails.
  Result<size_t> Acknowledge(uint64_t last_seq);

  SyncPosition position() const;
  // Applies the server's `writes` (except to rows with pending local
  // writes) and records `position`, in one storage transaction; the
  // storage's error, with nothing changed, when it fails.
  Status ApplyRemote(std::vector<RowWrite> writes, const SyncPosition& position);

 private:
  DeviceStorage& storage_;  // used under mu_ only

  mutable Mutex mu_;
  RowTable rows_ SKIFF_GUARDED_BY(mu_);
  std::deque<OutboxEntry> outbox_ SKIFF_GUARDED_BY(mu_);
  std::map<RowName, size_t> pending_ SKIFF_GUARDED_BY(mu_);  // outbox entries per row
  SyncPosition position_ SKIFF_GUARDED_BY(mu_);
  uint64_t last_seq_ SKIFF_GUARDED_BY(mu_) = 0;  // the highest seq handed out
};

}  // namespace skiff::client::internal

#endif  // SKIFF_CLIENT_INTERNAL_REPLICA_H_
