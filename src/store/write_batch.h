// WriteBatch: what a Store applies in one transaction: document puts and
// deletes, and for the sync engine, change-log entries (each also updating the
// synced row it names) and devices' last applied sequence numbers.
//
// The server's group commit collects the writes of many requests into one
// batch. Thread-compatible: build it on one thread, then hand it over.
#ifndef SKIFF_STORE_WRITE_BATCH_H_
#define SKIFF_STORE_WRITE_BATCH_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace skiff::store {

// One entry of the sync change log: row (group, table, key) became
// `value`, or was deleted (nullopt). Sync ids are unique and increase in
// commit order; the sync engine assigns them, the store only keeps them.
struct Change {
  uint64_t sync_id = 0;
  std::string group;
  std::string table;
  std::string key;
  std::optional<std::string> value;  // JSON text; nullopt deletes the row
  friend bool operator==(const Change&, const Change&) = default;
};

// The highest client sequence number applied for a device, and its owner.
struct DeviceSeq {
  std::string device;
  std::string user;
  uint64_t last_seq = 0;
  friend bool operator==(const DeviceSeq&, const DeviceSeq&) = default;
};

class WriteBatch {
 public:
  struct Op {
    enum class Kind { kPut, kDelete };
    Kind kind;
    std::string table;
    std::string key;
    std::string value;  // JSON text; empty for kDelete
  };

  // Later ops on the same key win, as if applied in order.
  void Put(std::string table, std::string key, std::string value) {
    ops_.push_back({Op::Kind::kPut, std::move(table), std::move(key), std::move(value)});
  }
  void Delete(std::string table, std::string key) {
    ops_.push_back({Op::Kind::kDelete, std::move(table), std::move(key), {}});
  }
  // Appends to the change log and sets (or deletes) the synced row.
  void AppendChange(Change change) { changes_.push_back(std::move(change)); }
  // Records a device's last applied sequence number (the latest call wins).
  void SetDeviceSeq(DeviceSeq seq) { device_seqs_.push_back(std::move(seq)); }

  // Cluster mode: the batch commits only if every partition it writes is
  // still owned by `owner` at `epoch` (PostgreSQL checks this in the same
  // transaction, under a share lock); otherwise nothing is applied.
  struct Fence {
    uint32_t partition;
    uint64_t owner;
    uint64_t epoch;
    friend bool operator==(const Fence&, const Fence&) = default;
  };
  void AddFence(Fence fence) { fences_.push_back(fence); }
  const std::vector<Fence>& fences() const { return fences_; }

  const std::vector<Op>& ops() const { return ops_; }
  const std::vector<Change>& changes() const { return changes_; }
  const std::vector<DeviceSeq>& device_seqs() const { return device_seqs_; }
  // Document ops only.
  size_t size() const { return ops_.size(); }
  bool empty() const { return ops_.empty() && changes_.empty() && device_seqs_.empty(); }
  bool has_sync() const { return !changes_.empty() || !device_seqs_.empty(); }
  void Clear() {
    ops_.clear();
    changes_.clear();
    device_seqs_.clear();
    fences_.clear();
  }

 private:
  std::vector<Op> ops_;
  std::vector<Change> changes_;
  std::vector<DeviceSeq> device_seqs_;
  std::vector<Fence> fences_;
};

}  // namespace skiff::store

#endif  // SKIFF_STORE_WRITE_BATCH_H_
