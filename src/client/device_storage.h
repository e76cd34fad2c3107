// DeviceStorage: where a Device keeps its copy of the rows it may see, its
// outbox of writes the server has not confirmed, and its sync position.
//
// Rows are named by (group, table, key) and hold JSON text. Each method is
// one transaction: a local write and its outbox entry land together or not
// at all, and so do a page of pulled changes and the cursor after it.
// Implementations: MemoryStorage (memory_storage.h), SqliteStorage
// (sqlite_storage.h) and LmdbStorage (lmdb_storage.h). A storage is used by
// one Device at a time; its methods are called from that Device under its
// replica's lock, so implementations need not be thread-safe, except
// statements(), which any thread may read.
#ifndef SKIFF_CLIENT_DEVICE_STORAGE_H_
#define SKIFF_CLIENT_DEVICE_STORAGE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "client/sync_messages.h"

namespace skiff::client {

struct StoredRow {
  RowName name;
  std::string value;  // JSON text
};

// A write the device made, waiting for the server.
using OutboxEntry = SyncChange;

// Where the device stands with the server.
struct SyncPosition {
  uint64_t cursor = 0;        // pull from here
  bool bootstrapped = false;  // the first full download finished
  // The bootstrap page to fetch next while one is in progress.
  std::optional<RowName> bootstrap_after;
  uint64_t bootstrap_cursor = 0;  // the cursor of its first page
};

// Everything Load reads back.
struct StoredState {
  std::vector<StoredRow> rows;
  std::vector<OutboxEntry> outbox;  // in seq order
  SyncPosition position;
  uint64_t last_seq = 0;  // the highest seq ever handed out
};

class DeviceStorage {
 public:
  virtual ~DeviceStorage() = default;

  // Reads the whole stored state; an empty state for a new storage.
  virtual Result<StoredState> Load() = 0;

  // Sets the local row and appends `entry` to the outbox, in one
  // transaction.
  virtual Status WriteLocal(const OutboxEntry& entry) = 0;

  // Applies `rows` and records `position`, in one transaction.
  virtual Status ApplyRemote(const std::vector<RowWrite>& rows, const SyncPosition& position) = 0;

  // Drops the outbox entries with seq <= `last_seq`.
  virtual Status Acknowledge(uint64_t last_seq) = 0;

  // Statements the storage has run since it was opened: SQL statements for
  // SQLite; gets, puts, deletes and cursor steps for LMDB; 0 for memory,
  // which runs none.
  virtual uint64_t statements() const = 0;
};

}  // namespace skiff::client

#endif  // SKIFF_CLIENT_DEVICE_STORAGE_H_
