// Workloads the key-value scenarios share: deterministic keys and values,
// unique-key writes that remember what was acknowledged, and the read-back
// that checks it afterwards.
//
// Values are written in the exact text the server gives back (compact JSON,
// members in key order, integers and plain strings only), so a read is
// checked by comparing bytes; a difference falls back to comparing parsed
// values before it is called a mismatch.
//
// Not thread-safe: used on the load driver's thread.
#ifndef SKIFF_SUPPORT_KV_WORKLOADS_H_
#define SKIFF_SUPPORT_KV_WORKLOADS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "support/load_driver.h"

namespace skiff::bench {

// "k000000042": fixed width, so key order is number order.
std::string KeyFor(uint64_t i);
// {"n":i,"s":"v<i>"}
std::string SmallValue(uint64_t i);
// {"blob":"<letters>","n":i}, `bytes` long in all.
std::string PayloadValue(uint64_t i, size_t bytes);

// True when `got` is `want`, as bytes or as parsed JSON.
bool SameJson(std::string_view got, std::string_view want);

// The body of a request on (table, key): "op":"OP","table":..,"key":..
void AppendKeyOp(std::string& body, std::string_view op, std::string_view table,
                 std::string_view key);

// One document, PayloadValue(1, 200) at key "hot" of `table`, read again and
// again with `op` ("get" or "has"). Every reply must find it, and a get's
// value must be the one written. Send preload() once first.
class HotKeyReads final : public Workload {
 public:
  HotKeyReads(std::string_view table, std::string_view op);

  // The set that writes the document.
  const std::string& preload() const { return preload_; }

  bool Next(size_t, size_t, std::string& body) override {
    body += read_;
    return true;
  }
  std::string Check(size_t conn, size_t slot, const ReplyView& reply) override;

 private:
  const std::string value_;
  std::string preload_;
  std::string read_;
  const bool is_get_;
};

// Sets KeyFor(i) = value(i) for i = 0, 1, ... across every slot; remembers
// which writes were acknowledged.
class UniqueSets : public Workload {
 public:
  UniqueSets(std::string table, std::function<std::string(uint64_t)> value)
      : table_(std::move(table)), value_(std::move(value)) {}

  bool Next(size_t conn, size_t slot, std::string& body) override;
  std::string Check(size_t conn, size_t slot, const ReplyView& reply) override;

  uint64_t sent() const { return next_; }
  uint64_t acked() const { return acked_count_; }
  // Up to `n` acknowledged keys, spread evenly, always with the first and
  // the last.
  std::vector<uint64_t> SampleAcked(size_t n) const;

 private:
  const std::string table_;
  const std::function<std::string(uint64_t)> value_;
  uint64_t next_ = 0;
  uint64_t acked_count_ = 0;
  std::vector<bool> acked_;
  std::vector<std::vector<uint64_t>> slot_key_;  // [conn][slot]
};

// Gets every key in `ids` and checks it holds value(i).
class ReadBack : public Workload {
 public:
  ReadBack(std::string table, std::vector<uint64_t> ids, std::function<std::string(uint64_t)> value)
      : table_(std::move(table)), ids_(std::move(ids)), value_(std::move(value)) {}

  bool Next(size_t conn, size_t slot, std::string& body) override;
  std::string Check(size_t conn, size_t slot, const ReplyView& reply) override;
  uint64_t verified() const { return verified_; }

 private:
  const std::string table_;
  const std::vector<uint64_t> ids_;
  const std::function<std::string(uint64_t)> value_;
  size_t next_ = 0;
  uint64_t verified_ = 0;
  std::vector<std::vector<uint64_t>> slot_key_;
};

// Per slot, a chain on its own key: set, get, has, add, get, delete, has.
// Each step checks the reply against what the chain did before, so every
// read is compared with what was written even with 512 requests in flight.
class MixedChain final : public Workload {
 public:
  explicit MixedChain(std::string table) : table_(std::move(table)) {}
  static constexpr int kSteps = 7;

  bool Next(size_t conn, size_t slot, std::string& body) override;
  std::string Check(size_t conn, size_t slot, const ReplyView& reply) override;
  // A failed step leaves the key's state unknown: start a new chain.
  void Failed(size_t conn, size_t slot, bool) override { step_[conn][slot] = 0; }
  uint64_t chains() const { return chains_; }

 private:
  const std::string table_;
  uint64_t next_ = 0;
  uint64_t chains_ = 0;
  std::vector<std::vector<uint64_t>> key_;
  std::vector<std::vector<uint64_t>> step_;
};

// Grows a [conn][slot] table to hold (conn, slot).
void EnsureSlot(std::vector<std::vector<uint64_t>>& table, size_t conn, size_t slot);

}  // namespace skiff::bench

#endif  // SKIFF_SUPPORT_KV_WORKLOADS_H_
