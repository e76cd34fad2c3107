// MemoryStore: the store behind `memory:`. Nothing survives the process; it
// exists for tests and for measuring the server without a database. It sends
// no SQL, so its statement counter stays at zero.
#include <map>
#include <mutex>

#include "store/store.h"

namespace skiff::store {
namespace {

class MemoryStore final : public Store {
 public:
  std::string_view kind() const override { return "memory"; }

  Result<std::optional<std::string>> Get(std::string_view table, std::string_view key) override {
    SKIFF_RETURN_IF_ERROR(ValidateGet(table, key));
    std::lock_guard lock(mu_);
    auto t = tables_.find(table);
    if (t == tables_.end()) return std::optional<std::string>();
    auto it = t->second.find(key);
    if (it == t->second.end()) return std::optional<std::string>();
    return std::optional<std::string>(it->second);
  }

  Status Write(const WriteBatch& batch) override {
    SKIFF_RETURN_IF_ERROR(ValidateBatch(batch));
    std::lock_guard lock(mu_);
    for (const WriteBatch::Op& op : batch.ops()) {
      if (op.kind == WriteBatch::Op::Kind::kPut) {
        auto& rows = tables_[op.table];
        rows.insert_or_assign(op.key, op.value);
      } else if (auto t = tables_.find(op.table); t != tables_.end()) {
        t->second.erase(op.key);
      }
    }
    ++counters_.transactions;
    return Status::Ok();
  }

  Result<ScanPage> Scan(std::string_view table, std::string_view after, size_t limit) override {
    SKIFF_RETURN_IF_ERROR(ValidateScan(table, after, limit));
    std::lock_guard lock(mu_);
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
    std::lock_guard lock(mu_);
    return counters_;
  }

 private:
  using Rows = std::map<std::string, std::string, std::less<>>;
  mutable std::mutex mu_;
  std::map<std::string, Rows, std::less<>> tables_;  // GUARDED_BY(mu_)
  StoreCounters counters_;                           // GUARDED_BY(mu_)
};

}  // namespace

std::unique_ptr<Store> NewMemoryStore() { return std::make_unique<MemoryStore>(); }

}  // namespace skiff::store
