// SqliteStorage: a DeviceStorage in a SQLite file (WAL, synchronous=NORMAL,
// so a killed process loses nothing committed). Every method is one
// transaction; statements() counts each SQL statement stepped, BEGIN and
// COMMIT included, so benchmarks can report storage work deterministically.
// Not thread-safe (see device_storage.h) except statements().
#ifndef SKIFF_CLIENT_SQLITE_STORAGE_H_
#define SKIFF_CLIENT_SQLITE_STORAGE_H_

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "client/device_storage.h"

namespace skiff::client {

class SqliteStorage final : public DeviceStorage {
 public:
  // Opens (creating when missing) the file at `path`. unavailable when it
  // cannot be opened; internal when it is not a device storage.
  static Result<std::unique_ptr<SqliteStorage>> Open(const std::string& path);
  ~SqliteStorage() override;

  Result<StoredState> Load() override;
  Status WriteLocal(const OutboxEntry& entry) override;
  Status ApplyRemote(const std::vector<RowWrite>& rows, const SyncPosition& position) override;
  Status Acknowledge(uint64_t last_seq) override;
  uint64_t statements() const override { return statements_.load(std::memory_order_relaxed); }

 private:
  class Db;
  explicit SqliteStorage(std::unique_ptr<Db> db);
  std::unique_ptr<Db> db_;
  std::atomic<uint64_t> statements_{0};
};

}  // namespace skiff::client

#endif  // SKIFF_CLIENT_SQLITE_STORAGE_H_
