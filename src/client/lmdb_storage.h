// LmdbStorage: a DeviceStorage in an LMDB file, one key per row. The keys
// and values are format v1 of client/internal/lmdb_format.h; this class
// runs the transactions around them.
//
// Each method is one write transaction (Load: one read transaction and one
// cursor pass). statements() counts the LMDB calls that read or write a key:
// gets, puts, deletes and cursor steps, not the transactions around them.
// Load of n rows and m outbox entries takes n + m + 2 steps.
//
// The map (the file's address space) starts at `map_size` and, when a
// write finds it full, doubles (or more, for a large write) up to
// `max_map_size`, and the write is retried once.
//
// Durability matches SqliteStorage (WAL, synchronous=NORMAL): commits are not
// flushed (MDB_NOSYNC), so a killed process loses nothing committed; the
// file is flushed by Close. Unlike SQLite's WAL, a power loss before that
// flush can also damage the file, not only drop the last commits;
// `sync_each_commit` flushes every commit instead.
//
// The file is `path`, with LMDB's lock file beside it (`path` + "-lock").
// LMDB allows one open of a file per process at a time: close a storage
// before opening its file again. Not thread-safe (see device_storage.h)
// except statements().
#ifndef SKIFF_CLIENT_LMDB_STORAGE_H_
#define SKIFF_CLIENT_LMDB_STORAGE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "client/device_storage.h"

namespace skiff::client {

struct LmdbStorageOptions {
  // The map an open starts with (a file already larger keeps its size):
  // address space reserved, not disk used.
  size_t map_size = size_t{64} << 20;
  // The most the map may grow to. 2 GiB holds a million rows of ~200 bytes
  // several times over. A write that would pass it fails with unavailable
  // and changes nothing. Open refuses a map_size above it (bad_request).
  size_t max_map_size = size_t{2} << 30;
  // Flush every commit to disk (LMDB's default) instead of at close.
  bool sync_each_commit = false;
  // Tests only: the SHA-256 bytes a cut row key keeps (format v1: 16, at
  // most 32). Fewer make long names share cut keys, to test that they live
  // side by side; a file must always be opened with the value it was
  // written with.
  size_t cut_key_hash_bytes = 16;
};

class LmdbStorage final : public DeviceStorage {
 public:
  // Opens (creating when missing) the LMDB file at `path`. unavailable when
  // it cannot be opened (missing directory, no permission, a directory);
  // internal when the file is not LMDB or not a device storage, or when the
  // LMDB library cannot hold the format's keys; bad_request for options
  // out of range.
  static Result<std::unique_ptr<LmdbStorage>> Open(const std::string& path,
                                                   const LmdbStorageOptions& options = {});
  // Closes without reporting a failed flush: call Close to learn of it.
  ~LmdbStorage() override;

  // Flushes the file to disk and closes it, so it may be opened again.
  // unavailable (or internal) when the flush fails; the file is closed
  // anyway, and commits may be lost to a power loss. Later calls return OK;
  // every other method then fails with internal.
  Status Close();

  // Whether each commit is flushed (the environment's flags, as LMDB
  // reports them); false once closed.
  bool flushes_each_commit() const;

  Result<StoredState> Load() override;
  Status WriteLocal(const OutboxEntry& entry) override;
  Status ApplyRemote(const std::vector<RowWrite>& rows, const SyncPosition& position) override;
  Status Acknowledge(uint64_t last_seq) override;
  uint64_t statements() const override { return statements_.load(std::memory_order_relaxed); }

 private:
  class Env;
  LmdbStorage();
  // The open environment, or the internal error for a closed storage.
  Result<Env*> Live() const;
  std::string path_;
  std::unique_ptr<Env> env_;  // null once closed
  std::atomic<uint64_t> statements_{0};
};

}  // namespace skiff::client

#endif  // SKIFF_CLIENT_LMDB_STORAGE_H_
