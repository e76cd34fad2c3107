// Store: where documents live durably, by table and key.
//
// Implementations: MemoryStore (tests, `memory:`), SqliteStore (the embedded
// default, a WAL file) and PostgresStore (libpqxx). Open one by URL with
// OpenStore. Values are JSON text. Keys order by their bytes (memcmp), the
// same in every store, so scans page identically everywhere.
//
// Threading: every method may be called from any thread at any time. A
// store has one database connection and serialises its calls on it, so a
// call may wait for the one before it; none blocks for longer than the
// store's deadline (PostgresOptions, SqliteOptions::busy_timeout_ms), after
// which it fails. Callers that must stay responsive (an I/O thread) should
// still not call a store directly: the deadline is seconds, not microseconds.
//
// Failures come back as a Status; no exception escapes. What a failed Write
// means is part of the contract:
// - unavailable, bad_request, too_large, internal: nothing of the batch was
//   applied (for PostgreSQL also after a connection lost at COMMIT: the
//   store checks the batch's commit mark before it answers);
// - outcome_unknown: the commit was sent and its outcome could not be
//   learned within the deadline; the batch may or may not be applied.
//
// One server per database: a store opened `exclusive` (the default) holds a
// lock for its whole life (SQLite: flock on PATH.lock; PostgreSQL: a
// session advisory lock), and a second exclusive open of the same database
// fails with unavailable naming the holder. A PostgreSQL store opened in
// `cluster` mode takes the same lock shared: cluster instances coexist on one
// database, and a non-cluster server and a cluster one refuse each other.
#ifndef SKIFF_STORE_STORE_H_
#define SKIFF_STORE_STORE_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/logger.h"
#include "base/status.h"
#include "store/write_batch.h"

namespace skiff::store {

inline constexpr size_t kDefaultScanLimit = 1000;
inline constexpr size_t kMaxScanLimit = 10000;
inline constexpr size_t kMaxDeviceBytes = 256;
// Sync ids are stored as signed 64-bit integers (SQLite INTEGER, BIGINT).
inline constexpr uint64_t kMaxSyncId = (uint64_t{1} << 62);
// Device sequence numbers are stored the same way: larger ones are refused.
inline constexpr uint64_t kMaxDeviceSeq = (uint64_t{1} << 63) - 1;

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

// The most tables a cluster watches (Store::WatchTable): every fenced batch
// checks its writes against the list.
inline constexpr size_t kMaxWatchedTables = 256;

// One entry of a cluster's watch log (docs/cluster.md, "watch across
// instances"): a change of a watched table, or, without a key, the point
// from which `table` is watched (its changes after this version are logged).
struct WatchLogEntry {
  uint64_t version = 0;
  std::string table;
  std::optional<std::string> key;    // nullopt: the table became watched here
  std::optional<std::string> value;  // JSON text; nullopt: deleted
  friend bool operator==(const WatchLogEntry&, const WatchLogEntry&) = default;
};

// Where a cluster's watch log stands: the last version given out and the
// tables whose changes are logged.
struct WatchLogHead {
  uint64_t version = 0;
  std::vector<std::string> tables;
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

  // The highest sync id of each group that has changes after `after`. The
  // default filters LastSyncIdByGroup(); PostgreSQL reads the sync-id index.
  virtual Result<std::map<std::string, uint64_t>> LastSyncIdByGroupSince(uint64_t after);

  // --- Cluster sync: several servers numbering changes in one database. ---

  // Builds a sync batch from the committed state read under the counter's
  // lock: `last_sync_id` is the highest id given out by any instance and
  // `devices` the records of the devices asked for (absent: never seen).
  // The batch's changes must take the ids last_sync_id + 1, + 2, ... in
  // order; it may hold device records, never document ops. Runs inside the
  // transaction, with the store's connection held: pure computation only.
  using SyncBatchBuilder = std::function<void(
      uint64_t last_sync_id, const std::map<std::string, DeviceSeq, std::less<>>& devices,
      WriteBatch* batch)>;

  // One sync group commit as one transaction: locks the sync counter, reads
  // the records of `devices`, calls `build`, writes the batch, sets the
  // counter to the batch's last id and commits. Returns the counter after
  // the commit. A failure means what a failed Write means. Only PostgreSQL
  // implements it (and NotifySync); the others return bad_request.
  virtual Result<uint64_t> CommitSync(const std::vector<std::string>& devices,
                                      const SyncBatchBuilder& build);

  // Tells the other instances (their ChangeListener) that sync ids up to
  // `last` are committed: one NOTIFY, in autocommit. Sent after the commit,
  // never inside it: there NOTIFY takes a database-wide lock at commit.
  virtual Status NotifySync(uint64_t last);

  // --- Cluster watch: one numbering of watched tables' changes. ---
  // The statement that writes a fenced batch (cluster mode) also numbers
  // its changes of watched tables from one counter and appends them to the
  // watch log, all in its transaction; a commit that logged some sends a
  // NOTIFY on the watch channel (kWatchChannelSql) naming its last version.
  // Only PostgreSQL implements these; the others return bad_request.

  // The log's head now.
  virtual Result<WatchLogHead> ReadWatchLogHead();
  // Makes `table` watched across the cluster (a no-op when it is) and
  // returns the last version given out once it is: every change of the
  // table committed after that version is logged. unavailable when
  // kMaxWatchedTables other tables are watched.
  virtual Result<uint64_t> WatchTable(std::string_view table);
  // Up to `limit` entries after `after`, in version order.
  virtual Result<std::vector<WatchLogEntry>> ReadWatchLog(uint64_t after, size_t limit);
  // Lets go of the entries up to `through`.
  virtual Status TrimWatchLog(uint64_t through);

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
  Result<std::map<std::string, uint64_t>> LastSyncIdByGroupSince(uint64_t after) override {
    return target_.LastSyncIdByGroupSince(after);
  }
  Result<uint64_t> CommitSync(const std::vector<std::string>& devices,
                              const SyncBatchBuilder& build) override {
    return target_.CommitSync(devices, build);
  }
  Status NotifySync(uint64_t last) override { return target_.NotifySync(last); }
  Result<WatchLogHead> ReadWatchLogHead() override { return target_.ReadWatchLogHead(); }
  Result<uint64_t> WatchTable(std::string_view table) override { return target_.WatchTable(table); }
  Result<std::vector<WatchLogEntry>> ReadWatchLog(uint64_t after, size_t limit) override {
    return target_.ReadWatchLog(after, limit);
  }
  Status TrimWatchLog(uint64_t through) override { return target_.TrimWatchLog(through); }

  Store& target() const { return target_; }

 private:
  Store& target_;
};

// How OpenStore opens a store.
struct OpenOptions {
  // Hold the database's instance lock for the store's life and refuse to
  // open one another store holds (unavailable, naming the holder). skiffd
  // opens this way; the admin CLI opens without it, which is safe because
  // it only writes the `$users` and `$groups` tables, which the server reads
  // from the store at each login and never writes itself.
  bool exclusive = true;
  // One of several servers on one PostgreSQL database (cluster mode): the
  // instance lock is taken shared, so cluster servers open beside each other
  // and a server not in cluster mode is refused beside them (and they beside
  // it). Applies with `exclusive`; SQLite and memory refuse it.
  bool cluster = false;
  // PostgreSQL: keep trying to connect for this long when the server does
  // not answer yet (started after skiffd), with back-off from 100 ms to 2 s,
  // calling `on_wait` with the reason before each wait. 0 = fail at once.
  std::chrono::milliseconds wait_for_server{0};
  std::function<void(const Status& reason, std::chrono::milliseconds left)> on_wait;
  // PostgreSQL: where a lost connection and its recovery are reported (one
  // warning when an outage starts, one info line when it ends). Must
  // outlive the store; null: stderr, as program "skiff".
  Logger* logger = nullptr;
};

struct SqliteOptions {
  // NORMAL survives a killed process (WAL); FULL also survives power loss.
  bool synchronous_full = false;
  // How long a statement waits for a lock another connection holds (the
  // admin CLI, the checkpointer) before it fails with unavailable.
  int busy_timeout_ms = 5000;
  bool exclusive = true;  // see OpenOptions
};

// Deadlines of a PostgreSQL store. Each can also be set by a parameter of
// the store URL, in milliseconds (`?statement_timeout_ms=2000`), which the
// store takes out before the URL reaches libpq.
struct PostgresOptions {
  // The server cancels a statement that runs longer (statement_timeout) or
  // waits longer for a lock (lock_timeout); the call fails with unavailable
  // and the connection stays usable.
  std::chrono::milliseconds statement_timeout{5000};
  std::chrono::milliseconds lock_timeout{2000};
  // Whatever the server or the network does (a frozen server still has its
  // kernel acknowledge every packet), no call blocks longer than this: the
  // store shuts its socket down, the call fails and the next one
  // reconnects. Also bounds the commit check after a lost COMMIT.
  // Connecting is bounded by libpq's connect_timeout (seconds, added to
  // the URL as 5 when it has none).
  std::chrono::milliseconds call_timeout{8000};
  bool exclusive = true;                         // see OpenOptions
  bool cluster = false;                          // see OpenOptions
  std::chrono::milliseconds wait_for_server{0};  // see OpenOptions
  std::function<void(const Status& reason, std::chrono::milliseconds left)> on_wait;
  Logger* logger = nullptr;  // see OpenOptions
};

std::unique_ptr<Store> NewMemoryStore();
// Opens (creating when missing) the SQLite file at `path` in WAL mode.
Result<std::unique_ptr<Store>> OpenSqliteStore(const std::string& path,
                                               const SqliteOptions& options = {});
// Connects to PostgreSQL at `url` (a libpq URI, plus the PostgresOptions
// parameters above, which override `options`) and creates the schema when
// missing. unavailable when the server cannot be reached; bad_request for a
// store parameter that does not parse.
Result<std::unique_ptr<Store>> OpenPostgresStore(const std::string& url,
                                                 const PostgresOptions& options = {});

// Opens a store by URL: `memory:`, `sqlite:PATH` or `postgres://...` /
// `postgresql://...`. bad_request for any other form.
Result<std::unique_ptr<Store>> OpenStore(std::string_view url, const OpenOptions& options = {});

// Shared validation, so every store rejects the same input with the same
// message. Table names are the protocol's, or '$' followed by one for the
// server's system tables.
Status ValidateBatch(const WriteBatch& batch);
Status ValidateTable(std::string_view table);
Status ValidateGet(std::string_view table, std::string_view key);
Status ValidateScan(std::string_view table, std::string_view after, size_t limit);
// Groups are named like tables; a list may be empty (it matches nothing).
Status ValidateGroups(const std::vector<std::string>& groups);
Status ValidateDevice(std::string_view device);
Status ValidateSyncScan(const std::vector<std::string>& groups, const SyncRowCursor& after,
                        size_t limit);

}  // namespace skiff::store

#endif  // SKIFF_STORE_STORE_H_
