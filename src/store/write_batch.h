// WriteBatch: puts and deletes that a Store applies in one transaction.
//
// The server's group commit collects the writes of many requests into one
// batch. Thread-compatible: build it on one thread, then hand it over.
#ifndef SKIFF_STORE_WRITE_BATCH_H_
#define SKIFF_STORE_WRITE_BATCH_H_

#include <cstddef>
#include <string>
#include <vector>

namespace skiff::store {

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

  const std::vector<Op>& ops() const { return ops_; }
  size_t size() const { return ops_.size(); }
  bool empty() const { return ops_.empty(); }
  void Clear() { ops_.clear(); }

 private:
  std::vector<Op> ops_;
};

}  // namespace skiff::store

#endif  // SKIFF_STORE_WRITE_BATCH_H_
