// Store: where documents live durably, by table and key.
//
// Implementations: MemoryStore (tests, `memory:`), SqliteStore (the embedded
// default, a WAL file) and PostgresStore (libpqxx). Open one by URL with
// OpenStore. Values are JSON text. Keys order by their bytes (memcmp), the
// same in every store, so scans page identically everywhere.
//
// Every method is thread-safe; a store serialises access to its connection
// internally. Failures of the underlying database come back as a Status
// (unavailable when a retry may help); no exception escapes.
#ifndef SKIFF_STORE_STORE_H_
#define SKIFF_STORE_STORE_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "store/write_batch.h"

namespace skiff::store {

inline constexpr size_t kDefaultScanLimit = 1000;
inline constexpr size_t kMaxScanLimit = 10000;
inline constexpr size_t kMaxDeviceBytes = 256;
// Sync ids are stored as signed 64-bit integers (SQLite INTEGER, BIGINT).
inline constexpr uint64_t kMaxSyncId = (uint64_t{1} << 62);

struct KeyValue {
  std::string key;
  std::string value;
  friend bool operator==(const KeyValue&, const KeyValue&) = default;
};

struct ScanPage {
  std::vector<KeyValue> items;      // in key order
  std::optional<std::string> next;  // pass as `after` for the next page; nullopt at the end
};

// A synced row as bootstrap sees it.
struct SyncRow {
  std::string group;
  std::string table;
  std::string key;
  std::string value;
  uint64_t sync_id = 0;  // of the change that last wrote it
  friend bool operator==(const SyncRow&, const SyncRow&) = default;
};

// Position in the (group, table, key) order of synced rows; an empty group
// means the start.
struct SyncRowCursor {
  std::string group;
  std::string table;
  std::string key;
  friend bool operator==(const SyncRowCursor&, const SyncRowCursor&) = default;
};

struct SyncRowPage {
  std::vector<SyncRow> rows;          // in (group, table, key) order
  std::optional<SyncRowCursor> next;  // nullopt at the end
};

// What a store has done since it was opened. Counted where the work happens,
// so benchmarks can report them as deterministic numbers.
struct StoreCounters {
  uint64_t statements = 0;    // SQL statements sent, BEGIN and COMMIT included
  uint64_t transactions = 0;  // committed write transactions (autocommit included)
};

class Store {
 public:
  virtual ~Store() = default;

  // "memory", "sqlite" or "postgres".
  virtual std::string_view kind() const = 0;

  // The value stored under (table, key), or nullopt when there is none.
  // bad_request for an invalid table name or key.
  virtual Result<std::optional<std::string>> Get(std::string_view table, std::string_view key) = 0;

  // Applies every op of `batch` in one transaction: after an error none of
  // them is visible. bad_request (nothing applied) for an invalid name or key.
  virtual Status Write(const WriteBatch& batch) = 0;

  // Up to `limit` (1..kMaxScanLimit) items of `table` with keys after `after`
  // (from the first key when `after` is empty), in key order.
  virtual Result<ScanPage> Scan(std::string_view table, std::string_view after, size_t limit) = 0;

  virtual StoreCounters counters() const = 0;

  // --- The sync engine's reads (writes go through WriteBatch). ---

  // The highest sync id in the change log; 0 when it is empty.
  virtual Result<uint64_t> LastSyncId() = 0;

  // The highest sync id of each group that has changes.
  virtual Result<std::map<std::string, uint64_t>> LastSyncIdByGroup() = 0;

  // Up to `limit` changes with sync_id > `after` whose group is in `groups`,
  // in sync-id order.
  virtual Result<std::vector<Change>> ReadChanges(uint64_t after,
                                                  const std::vector<std::string>& groups,
                                                  size_t limit) = 0;

  // Up to `limit` current synced rows of `groups` after `after`, in (group,
  // table, key) order. A row is named by (group, table, key): the same table
  // and key in two groups are two rows, so no group can touch another's.
  virtual Result<SyncRowPage> ScanSyncRows(const std::vector<std::string>& groups,
                                           const SyncRowCursor& after, size_t limit) = 0;

  // The device's record, or nullopt for a device never seen.
  virtual Result<std::optional<DeviceSeq>> GetDevice(std::string_view device) = 0;

  // Conveniences: a batch of one.
  Status Put(std::string_view table, std::string_view key, std::string_view value);
  Status Delete(std::string_view table, std::string_view key);
};

// Forwards every call to another store. Tests derive from it to inject faults
// (the way leveldb's EnvWrapper is used); it does not own the target.
class StoreWrapper : public Store {
 public:
  explicit StoreWrapper(Store& target) : target_(target) {}

  std::string_view kind() const override { return target_.kind(); }
  Result<std::optional<std::string>> Get(std::string_view table, std::string_view key) override {
    return target_.Get(table, key);
  }
  Status Write(const WriteBatch& batch) override { return target_.Write(batch); }
  Result<ScanPage> Scan(std::string_view table, std::string_view after, size_t limit) override {
    return target_.Scan(table, after, limit);
  }
  StoreCounters counters() const override { return target_.counters(); }
  Result<uint64_t> LastSyncId() override { return target_.LastSyncId(); }
  Result<std::map<std::string, uint64_t>> LastSyncIdByGroup() override {
    return target_.LastSyncIdByGroup();
  }
  Result<std::vector<Change>> ReadChanges(uint64_t after, const std::vector<std::string>& groups,
                                          size_t limit) override {
    return target_.ReadChanges(after, groups, limit);
  }
  Result<SyncRowPage> ScanSyncRows(const std::vector<std::string>& groups,
                                   const SyncRowCursor& after, size_t limit) override {
    return target_.ScanSyncRows(groups, after, limit);
  }
  Result<std::optional<DeviceSeq>> GetDevice(std::string_view device) override {
    return target_.GetDevice(device);
  }

  Store& target() const { return target_; }

 private:
  Store& target_;
};

struct SqliteOptions {
  // NORMAL survives a killed process (WAL); FULL also survives power loss.
  bool synchronous_full = false;
  int busy_timeout_ms = 5000;
};

std::unique_ptr<Store> NewMemoryStore();
// Opens (creating when missing) the SQLite file at `path` in WAL mode.
Result<std::unique_ptr<Store>> OpenSqliteStore(const std::string& path,
                                               const SqliteOptions& options = {});
// Connects to PostgreSQL at `url` (libpq syntax) and creates the schema when
// missing. unavailable when the server cannot be reached.
Result<std::unique_ptr<Store>> OpenPostgresStore(const std::string& url);

// Opens a store by URL: `memory:`, `sqlite:PATH` or `postgres://...` /
// `postgresql://...`. bad_request for any other form.
Result<std::unique_ptr<Store>> OpenStore(std::string_view url);

// Shared validation, so every store rejects the same input with the same
// message. Table names are the protocol's, or '$' followed by one for the
// server's system tables.
Status ValidateBatch(const WriteBatch& batch);
Status ValidateGet(std::string_view table, std::string_view key);
Status ValidateScan(std::string_view table, std::string_view after, size_t limit);
// Groups are named like tables; a list may be empty (it matches nothing).
Status ValidateGroups(const std::vector<std::string>& groups);
Status ValidateDevice(std::string_view device);
Status ValidateSyncScan(const std::vector<std::string>& groups, const SyncRowCursor& after,
                        size_t limit);

}  // namespace skiff::store

#endif  // SKIFF_STORE_STORE_H_
