// CountedStore: the server's store as every part of it sees it (the
// committer, the store workers, the sync engine), counting the calls that
// failed for the store's own sake: unavailable, internal or outcome_unknown
// (a refused name or key is the caller's error and is not counted). It is
// the one place every store error passes, so /metrics counts them without a
// counter in each caller. Writes (Write, CommitSync, NotifySync) and reads
// (every other call) are counted apart.
//
// Counting costs a relaxed atomic addition per failed call only.
// Thread-safe as far as the target store is.
#ifndef SKIFF_SERVER_INTERNAL_COUNTED_STORE_H_
#define SKIFF_SERVER_INTERNAL_COUNTED_STORE_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "store/store.h"

namespace skiff::server::internal {

struct StoreErrors {
  uint64_t reads = 0;
  uint64_t writes = 0;
};

class CountedStore : public store::StoreWrapper {
 public:
  explicit CountedStore(store::Store& target) : StoreWrapper(target) {}

  StoreErrors errors() const {
    return {read_errors_.load(std::memory_order_relaxed),
            write_errors_.load(std::memory_order_relaxed)};
  }

  Result<std::optional<std::string>> Get(std::string_view table, std::string_view key) override {
    return Read(StoreWrapper::Get(table, key));
  }
  Status Write(const store::WriteBatch& batch) override {
    return Counted(StoreWrapper::Write(batch), write_errors_);
  }
  Result<store::ScanPage> Scan(std::string_view table, std::string_view after,
                               size_t limit) override {
    return Read(StoreWrapper::Scan(table, after, limit));
  }
  Result<uint64_t> LastSyncId() override { return Read(StoreWrapper::LastSyncId()); }
  Result<std::map<std::string, uint64_t>> LastSyncIdByGroup() override {
    return Read(StoreWrapper::LastSyncIdByGroup());
  }
  Result<std::vector<store::Change>> ReadChanges(uint64_t after,
                                                 const std::vector<std::string>& groups,
                                                 size_t limit) override {
    return Read(StoreWrapper::ReadChanges(after, groups, limit));
  }
  Result<store::SyncRowPage> ScanSyncRows(const std::vector<std::string>& groups,
                                          const store::SyncRowCursor& after,
                                          size_t limit) override {
    return Read(StoreWrapper::ScanSyncRows(groups, after, limit));
  }
  Result<std::optional<store::DeviceSeq>> GetDevice(std::string_view device) override {
    return Read(StoreWrapper::GetDevice(device));
  }
  Result<std::map<std::string, uint64_t>> LastSyncIdByGroupSince(uint64_t after) override {
    return Read(StoreWrapper::LastSyncIdByGroupSince(after));
  }
  Result<uint64_t> CommitSync(const std::vector<std::string>& devices,
                              const SyncBatchBuilder& build) override {
    Result<uint64_t> r = StoreWrapper::CommitSync(devices, build);
    if (!r.ok()) Count(r.status(), write_errors_);
    return r;
  }
  Status NotifySync(uint64_t last) override {
    return Counted(StoreWrapper::NotifySync(last), write_errors_);
  }

 private:
  static void Count(const Status& s, std::atomic<uint64_t>& counter) {
    const StatusCode c = s.code();
    if (c == StatusCode::kUnavailable || c == StatusCode::kInternal ||
        c == StatusCode::kOutcomeUnknown) {
      counter.fetch_add(1, std::memory_order_relaxed);
    }
  }
  Status Counted(Status s, std::atomic<uint64_t>& counter) {
    if (!s.ok()) Count(s, counter);
    return s;
  }
  template <typename T>
  Result<T> Read(Result<T> r) {
    if (!r.ok()) Count(r.status(), read_errors_);
    return r;
  }

  std::atomic<uint64_t> read_errors_{0};
  std::atomic<uint64_t> write_errors_{0};
};

}  // namespace skiff::server::internal

#endif  // SKIFF_SERVER_INTERNAL_COUNTED_STORE_H_
