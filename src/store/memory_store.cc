// MemoryStore: the store behind `memory:`. Nothing survives the process; it
// exists for tests and for measuring the server without a database. It sends
// no SQL, so its statement counter stays at zero.
#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "base/mutex.h"
#include "store/store.h"

namespace skiff::store {
namespace {

class MemoryStore final : public Store {
 public:
  std::string_view kind() const override { return "memory"; }

  Result<std::optional<std::string>> Get(std::string_view table, std::string_view key) override {
    SKIFF_RETURN_IF_ERROR(ValidateGet(table, key));
    MutexLock lock(&mu_);
    auto t = tables_.find(table);
    if (t == tables_.end()) return std::optional<std::string>();
    auto it = t->second.find(key);
    if (it == t->second.end()) return std::optional<std::string>();
    return std::optional<std::string>(it->second);
  }

  Status Write(const WriteBatch& batch) override {
    SKIFF_RETURN_IF_ERROR(ValidateBatch(batch));
    MutexLock lock(&mu_);
    // Like the SQL stores' primary key: a logged sync id is never reused, and
    // a batch that would reuse one applies nothing.
    std::set<uint64_t> batch_ids;
    for (const Change& change : batch.changes()) {
      if (logged_ids_.count(change.sync_id) > 0 || !batch_ids.insert(change.sync_id).second) {
        return Internal("sync id " + std::to_string(change.sync_id) + " is already logged");
      }
    }
    for (const WriteBatch::Op& op : batch.ops()) {
      if (op.kind == WriteBatch::Op::Kind::kPut) {
        auto& rows = tables_[op.table];
        rows.insert_or_assign(op.key, op.value);
      } else if (auto t = tables_.find(op.table); t != tables_.end()) {
        t->second.erase(op.key);
      }
    }
    for (const Change& change : batch.changes()) {
      changes_.push_back(change);
      logged_ids_.insert(change.sync_id);
      last_sync_id_ = std::max(last_sync_id_, change.sync_id);
      const RowKey row_key{change.group, change.table, change.key};
      if (change.value) {
        sync_rows_[row_key] =
            SyncRow{change.group, change.table, change.key, *change.value, change.sync_id};
      } else {
        sync_rows_.erase(row_key);
      }
    }
    for (const DeviceSeq& seq : batch.device_seqs()) devices_[seq.device] = seq;
    ++counters_.transactions;
    return Status::Ok();
  }

  Result<ScanPage> Scan(std::string_view table, std::string_view after, size_t limit) override {
    SKIFF_RETURN_IF_ERROR(ValidateScan(table, after, limit));
    MutexLock lock(&mu_);
    ScanPage page;
    auto t = tables_.find(table);
    if (t == tables_.end()) return page;
    auto it = after.empty() ? t->second.begin() : t->second.upper_bound(after);
    for (; it != t->second.end() && page.items.size() < limit; ++it) {
      page.items.push_back({it->first, it->second});
    }
    if (it != t->second.end() && !page.items.empty()) page.next = page.items.back().key;
    return page;
  }

  StoreCounters counters() const override {
    MutexLock lock(&mu_);
    return counters_;
  }

  Result<uint64_t> LastSyncId() override {
    MutexLock lock(&mu_);
    return last_sync_id_;
  }

  Result<std::map<std::string, uint64_t>> LastSyncIdByGroup() override {
    MutexLock lock(&mu_);
    std::map<std::string, uint64_t> out;
    for (const Change& c : changes_) out[c.group] = std::max(out[c.group], c.sync_id);
    return out;
  }

  Result<std::vector<Change>> ReadChanges(uint64_t after, const std::vector<std::string>& groups,
                                          size_t limit) override {
    SKIFF_RETURN_IF_ERROR(ValidateGroups(groups));
    MutexLock lock(&mu_);
    std::vector<Change> out;
    for (const Change& c : changes_) {
      if (c.sync_id <= after || !Contains(groups, c.group)) continue;
      out.push_back(c);
    }
    std::sort(out.begin(), out.end(),
              [](const Change& a, const Change& b) { return a.sync_id < b.sync_id; });
    if (out.size() > limit) out.resize(limit);
    return out;
  }

  Result<SyncRowPage> ScanSyncRows(const std::vector<std::string>& groups,
                                   const SyncRowCursor& after, size_t limit) override {
    SKIFF_RETURN_IF_ERROR(ValidateSyncScan(groups, after, limit));
    MutexLock lock(&mu_);
    SyncRowPage page;
    page.rows.reserve(std::min(limit, sync_rows_.size()));
    auto it = after.group.empty()
                  ? sync_rows_.begin()
                  : sync_rows_.upper_bound(RowKey{after.group, after.table, after.key});
    for (; it != sync_rows_.end(); ++it) {
      if (!Contains(groups, it->second.group)) continue;
      if (page.rows.size() == limit) {
        const SyncRow& last = page.rows.back();
        page.next = SyncRowCursor{last.group, last.table, last.key};
        break;
      }
      page.rows.push_back(it->second);
    }
    return page;
  }

  Result<std::optional<DeviceSeq>> GetDevice(std::string_view device) override {
    SKIFF_RETURN_IF_ERROR(ValidateDevice(device));
    MutexLock lock(&mu_);
    auto it = devices_.find(device);
    if (it == devices_.end()) return std::optional<DeviceSeq>();
    return std::optional<DeviceSeq>(it->second);
  }

 private:
  using Rows = std::map<std::string, std::string, std::less<>>;
  mutable Mutex mu_;
  using RowKey = std::tuple<std::string, std::string, std::string>;  // (group, table, key)
  static bool Contains(const std::vector<std::string>& groups, const std::string& group) {
    return std::find(groups.begin(), groups.end(), group) != groups.end();
  }

  std::map<std::string, Rows, std::less<>> tables_ SKIFF_GUARDED_BY(mu_);
  std::vector<Change> changes_ SKIFF_GUARDED_BY(mu_);
  std::map<RowKey, SyncRow> sync_rows_ SKIFF_GUARDED_BY(mu_);
  std::map<std::string, DeviceSeq, std::less<>> devices_ SKIFF_GUARDED_BY(mu_);
  std::set<uint64_t> logged_ids_ SKIFF_GUARDED_BY(mu_);
  uint64_t last_sync_id_ SKIFF_GUARDED_BY(mu_) = 0;
  StoreCounters counters_ SKIFF_GUARDED_BY(mu_);
};

}  // namespace

std::unique_ptr<Store> NewMemoryStore() { return std::make_unique<MemoryStore>(); }

}  // namespace skiff::store
