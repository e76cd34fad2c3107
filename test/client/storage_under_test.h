// The device storages the tests run over, by name ("memory", "sqlite",
// "lmdb"), each on a file in its own temporary directory, so one suite can
// check every storage and reopen the file-backed ones. Not thread-safe.
#ifndef SKIFF_TEST_CLIENT_STORAGE_UNDER_TEST_H_
#define SKIFF_TEST_CLIENT_STORAGE_UNDER_TEST_H_

#include <memory>
#include <string>
#include <vector>

#include "client/device_storage.h"
#include "client/lmdb_storage.h"
#include "client/memory_storage.h"
#include "client/sqlite_storage.h"
#include "support/temp_dir.h"

namespace skiff::testing {

inline const std::vector<std::string>& StorageKinds() {
  static const std::vector<std::string> kinds = {"memory", "sqlite", "lmdb"};
  return kinds;
}

class StorageUnderTest {
 public:
  explicit StorageUnderTest(std::string kind) : kind_(std::move(kind)) {}

  const std::string& kind() const { return kind_; }
  // Whether the rows outlive the storage object (a file).
  bool persistent() const { return kind_ != "memory"; }
  std::string path() const { return dir_.File("device.db"); }

  // Opens the storage; for a file, closes it first (LMDB: checking that
  // its flush worked) and opens the file again (memory keeps its one
  // object: a reopen there is a new Device only).
  Status Reopen() {
    if (kind_ == "memory") return Status::Ok();
    if (lmdb_ != nullptr) {
      Status closed = lmdb_->Close();
      lmdb_ = nullptr;
      if (!closed.ok()) return closed;
    }
    owned_.reset();
    if (kind_ == "sqlite") {
      auto s = client::SqliteStorage::Open(path());
      if (!s.ok()) return s.status();
      owned_ = std::move(*s);
    } else {
      auto s = client::LmdbStorage::Open(path());
      if (!s.ok()) return s.status();
      lmdb_ = s->get();
      owned_ = std::move(*s);
    }
    return Status::Ok();
  }
  void Close() {
    lmdb_ = nullptr;
    owned_.reset();
  }

  client::DeviceStorage& get() { return owned_ ? *owned_ : memory_; }
  client::DeviceStorage* operator->() { return &get(); }

 private:
  std::string kind_;
  support::TempDir dir_;
  client::MemoryStorage memory_;
  std::unique_ptr<client::DeviceStorage> owned_;
  client::LmdbStorage* lmdb_ = nullptr;  // owned_, when it is LMDB
};

}  // namespace skiff::testing

#endif  // SKIFF_TEST_CLIENT_STORAGE_UNDER_TEST_H_
