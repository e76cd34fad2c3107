#include "store/store.h"

#include <string>

#include "doc/names.h"

namespace skiff::store {
namespace {

// Stores accept the protocol's table names plus a leading '$' for the
// server's own system tables ("$users"), which no client can name.
Status ValidateStoreTable(std::string_view table) {
  if (!table.empty() && table.front() == '$') table.remove_prefix(1);
  return doc::ValidateTableName(table);
}

// Values are JSON text, which never holds a raw NUL; PostgreSQL would cut a
// value there.
Status ValidateValue(std::string_view value) {
  if (value.find('\0') != std::string_view::npos) return BadRequest("value contains a NUL byte");
  return Status::Ok();
}

Status NoClusterWatch(std::string_view kind) {
  return BadRequest("watching across servers needs PostgreSQL: the " + std::string(kind) +
                    " store is one server's alone");
}

}  // namespace

Status ValidateBatch(const WriteBatch& batch) {
  for (const WriteBatch::Op& op : batch.ops()) {
    SKIFF_RETURN_IF_ERROR(ValidateStoreTable(op.table));
    SKIFF_RETURN_IF_ERROR(doc::ValidateKey(op.key));
    SKIFF_RETURN_IF_ERROR(ValidateValue(op.value));
  }
  for (const Change& change : batch.changes()) {
    SKIFF_RETURN_IF_ERROR(doc::ValidateTableName(change.group));
    SKIFF_RETURN_IF_ERROR(doc::ValidateTableName(change.table));
    SKIFF_RETURN_IF_ERROR(doc::ValidateKey(change.key));
    if (change.value) SKIFF_RETURN_IF_ERROR(ValidateValue(*change.value));
    if (change.sync_id == 0 || change.sync_id > kMaxSyncId) {
      return Internal("sync id out of range: " + std::to_string(change.sync_id));
    }
  }
  for (const DeviceSeq& seq : batch.device_seqs()) {
    SKIFF_RETURN_IF_ERROR(ValidateDevice(seq.device));
    SKIFF_RETURN_IF_ERROR(doc::ValidateKey(seq.user));
    if (seq.last_seq > kMaxDeviceSeq) {
      return BadRequest("device seq " + std::to_string(seq.last_seq) + " is not below 2^63");
    }
  }
  return Status::Ok();
}

Status ValidateGroups(const std::vector<std::string>& groups) {
  for (const std::string& group : groups) SKIFF_RETURN_IF_ERROR(doc::ValidateTableName(group));
  return Status::Ok();
}

Status ValidateDevice(std::string_view device) {
  if (device.size() > kMaxDeviceBytes) return TooLarge("device id is longer than 256 bytes");
  return doc::ValidateKey(device);
}

Status ValidateSyncScan(const std::vector<std::string>& groups, const SyncRowCursor& after,
                        size_t limit) {
  SKIFF_RETURN_IF_ERROR(ValidateGroups(groups));
  if (!after.group.empty()) {
    SKIFF_RETURN_IF_ERROR(doc::ValidateTableName(after.group));
    SKIFF_RETURN_IF_ERROR(doc::ValidateTableName(after.table));
    SKIFF_RETURN_IF_ERROR(doc::ValidateKey(after.key));
  }
  if (limit == 0 || limit > kMaxScanLimit) {
    return BadRequest("scan limit must be between 1 and " + std::to_string(kMaxScanLimit));
  }
  return Status::Ok();
}

Status ValidateTable(std::string_view table) { return ValidateStoreTable(table); }

Status ValidateGet(std::string_view table, std::string_view key) {
  SKIFF_RETURN_IF_ERROR(ValidateStoreTable(table));
  return doc::ValidateKey(key);
}

Status ValidateScan(std::string_view table, std::string_view after, size_t limit) {
  SKIFF_RETURN_IF_ERROR(ValidateStoreTable(table));
  if (!after.empty()) SKIFF_RETURN_IF_ERROR(doc::ValidateKey(after));
  if (limit == 0 || limit > kMaxScanLimit) {
    return BadRequest("scan limit must be between 1 and " + std::to_string(kMaxScanLimit));
  }
  return Status::Ok();
}

Status Store::Put(std::string_view table, std::string_view key, std::string_view value) {
  WriteBatch batch;
  batch.Put(std::string(table), std::string(key), std::string(value));
  return Write(batch);
}

Status Store::Delete(std::string_view table, std::string_view key) {
  WriteBatch batch;
  batch.Delete(std::string(table), std::string(key));
  return Write(batch);
}

Result<std::map<std::string, uint64_t>> Store::LastSyncIdByGroupSince(uint64_t after) {
  SKIFF_ASSIGN_OR_RETURN(auto by_group, LastSyncIdByGroup());
  std::erase_if(by_group, [after](const auto& entry) { return entry.second <= after; });
  return by_group;
}

Result<uint64_t> Store::CommitSync(const std::vector<std::string>&, const SyncBatchBuilder&) {
  return BadRequest("cluster sync needs PostgreSQL: the " + std::string(kind()) +
                    " store has no counter shared between servers");
}

Status Store::NotifySync(uint64_t) {
  return BadRequest("cluster sync needs PostgreSQL: the " + std::string(kind()) +
                    " store has no other servers to notify");
}

Result<WatchLogHead> Store::ReadWatchLogHead() { return NoClusterWatch(kind()); }
Result<uint64_t> Store::WatchTable(std::string_view) { return NoClusterWatch(kind()); }
Result<std::vector<WatchLogEntry>> Store::ReadWatchLog(uint64_t, size_t) {
  return NoClusterWatch(kind());
}
Status Store::TrimWatchLog(uint64_t) { return NoClusterWatch(kind()); }

Result<std::unique_ptr<Store>> OpenStore(std::string_view url, const OpenOptions& options) {
  if (options.cluster && !url.starts_with("postgres://") && !url.starts_with("postgresql://")) {
    return BadRequest("cluster mode needs PostgreSQL: '" + std::string(url) +
                      "' is not a postgres:// store, and only PostgreSQL can be shared by servers");
  }
  if (url == "memory:") return NewMemoryStore();
  if (url.starts_with("sqlite:")) {
    std::string path(url.substr(7));
    if (path.empty())
      return BadRequest("store URL 'sqlite:' needs a file path, e.g. sqlite:./skiff.db");
    SqliteOptions sqlite;
    sqlite.exclusive = options.exclusive;
    return OpenSqliteStore(path, sqlite);
  }
  if (url.starts_with("postgres://") || url.starts_with("postgresql://")) {
    PostgresOptions postgres;
    postgres.exclusive = options.exclusive;
    postgres.cluster = options.cluster;
    postgres.wait_for_server = options.wait_for_server;
    postgres.on_wait = options.on_wait;
    postgres.logger = options.logger;
    return OpenPostgresStore(std::string(url), postgres);
  }
  return BadRequest("unknown store URL '" + std::string(url) +
                    "': use memory:, sqlite:PATH or postgres://...");
}

}  // namespace skiff::store
