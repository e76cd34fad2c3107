// The contention family of the end-to-end suite: every worker (one pooled
// connection each, --concurrency of them, each pipelining --pipeline
// requests) edits one shared document, so every operation queues behind the
// others on one key. Each case ends with an invariant that a single lost or
// doubled update breaks: the counter equals the adds acknowledged, and the
// adds' replies are 1, 2, ... up to that count, each exactly once. The
// harness (support/scenario.h) judges the time per operation, the server's
// CPU per operation and its resident set; the counts here are info, since
// how many adds fit in --cap depends on the machine.
#include <algorithm>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <nlohmann/json.hpp>

#include "support/bench_registry.h"
#include "support/counters.h"
#include "support/kv_workloads.h"
#include "support/scenario.h"

namespace skiff::bench {
namespace {

// add(counter, ["n"], 1) from every slot of every worker.
class CounterAdds final : public Workload {
 public:
  explicit CounterAdds(const std::string& table) {
    AppendKeyOp(body_, "add", table, "counter");
    body_ += ",\"path\":[\"n\"],\"delta\":1";
  }
  bool Next(size_t, size_t, std::string& body) override {
    body += body_;
    return true;
  }
  std::string Check(size_t, size_t, const ReplyView& reply) override {
    const std::string_view text = ReplyMember(reply.text, "value");
    uint64_t v = 0;
    for (char c : text) {
      if (c < '0' || c > '9')
        return "add replied a value that is not a count: " + std::string(text);
      v = v * 10 + (c - '0');
    }
    ++acked_;
    // Adds of +1 on one key in one total order reply 1, 2, 3, ...: each
    // value exactly once.
    if (v == 0 || v > 100'000'000) return "add replied " + std::to_string(v);
    if (seen_.size() <= v) seen_.resize(v + 1 + v / 2);
    if (seen_[v]) return "two adds replied the same value " + std::to_string(v);
    seen_[v] = true;
    highest_ = std::max(highest_, v);
    return {};
  }
  uint64_t acked() const { return acked_; }
  // Distinct replies whose highest is the count of replies are exactly
  // 1..count: no add was skipped.
  uint64_t highest() const { return highest_; }

 private:
  std::string body_;
  uint64_t acked_ = 0;
  uint64_t highest_ = 0;
  std::vector<bool> seen_;
};

void AddCounter(ScenarioContext& ctx) {
  const std::string table = ctx.stack().FreshTable("counter");
  auto driver = ctx.Pool();
  if (!driver) return;
  CounterAdds adds(table);
  ctx.Measure(*driver, adds, ctx.Ops(400'000));
  std::string get;
  AppendKeyOp(get, "get", table, "counter");
  auto reply = ctx.CallOk(*driver, get, "final read");
  if (!reply) return;
  if (adds.highest() != adds.acked()) {
    return ctx.Fail("lost update: adds replied values up to " + std::to_string(adds.highest()) +
                    " for " + std::to_string(adds.acked()) + " acknowledged adds");
  }
  const std::string want = "{\"n\":" + std::to_string(adds.acked()) + "}";
  if (!SameJson(LastReplyMember(*reply, "value"), want)) {
    return ctx.Fail("lost update: counter is " + std::string(LastReplyMember(*reply, "value")) +
                    " after " + std::to_string(adds.acked()) + " acknowledged adds");
  }
  SetInfo(ctx.state(), "acked_adds", double(adds.acked()));
}

// Worker w cycles through: add ["total"] +1, add ["wNN","n"] +1, and
// merge {"wNN":{"last":seq}}, all in one document.
class NestedEdits final : public Workload {
 public:
  NestedEdits(std::string table, size_t workers)
      : table_(std::move(table)),
        seq_(workers, 0),
        n_acked_(workers, 0),
        last_merge_(workers, 0),
        slot_op_(workers) {}

  static std::string Worker(size_t w) {
    std::string name = w < 10 ? "w0" : "w";
    name += std::to_string(w);
    return name;
  }

  bool Next(size_t conn, size_t slot, std::string& body) override {
    if (slot_op_[conn].size() <= slot) slot_op_[conn].resize(slot + 1);
    const uint64_t seq = ++seq_[conn];
    slot_op_[conn][slot] = seq;
    AppendKeyOp(body, seq % 3 == 2 ? "merge" : "add", table_, "doc");
    switch (seq % 3) {
      case 0:
        body += ",\"path\":[\"total\"],\"delta\":1";
        break;
      case 1:
        body += ",\"path\":[\"" + Worker(conn) + "\",\"n\"],\"delta\":1";
        break;
      case 2:
        body += ",\"patch\":{\"" + Worker(conn) + "\":{\"last\":" + std::to_string(seq) + "}}";
        break;
    }
    return true;
  }
  std::string Check(size_t conn, size_t slot, const ReplyView&) override {
    const uint64_t seq = slot_op_[conn][slot];
    if (seq % 3 == 0) ++total_acked_;
    if (seq % 3 == 1) ++n_acked_[conn];
    if (seq % 3 == 2) last_merge_[conn] = std::max(last_merge_[conn], seq);
    return {};
  }

  // What the document must hold; empty when it does.
  std::string Verify(std::string_view text) const {
    auto doc = nlohmann::json::parse(text, nullptr, false);
    if (doc.is_discarded() || !doc.is_object()) return "the document is not an object";
    if (doc.value("total", -1.0) != double(total_acked_)) {
      return "lost update: total " + doc.value("total", nlohmann::json()).dump() + " after " +
             std::to_string(total_acked_) + " acknowledged adds";
    }
    for (size_t w = 0; w < seq_.size(); ++w) {
      if (seq_[w] == 0) continue;
      const auto& part = doc.value(Worker(w), nlohmann::json::object());
      if (part.value("n", 0.0) != double(n_acked_[w])) {
        return "lost update: " + Worker(w) + ".n is " + part.value("n", nlohmann::json()).dump() +
               " after " + std::to_string(n_acked_[w]) + " acknowledged adds";
      }
      if (last_merge_[w] > 0 && part.value("last", 0.0) != double(last_merge_[w])) {
        return Worker(w) + ".last is not the worker's last merge";
      }
    }
    return {};
  }
  uint64_t total_acked() const { return total_acked_; }

 private:
  const std::string table_;
  std::vector<uint64_t> seq_;
  std::vector<uint64_t> n_acked_;
  std::vector<uint64_t> last_merge_;
  std::vector<std::vector<uint64_t>> slot_op_;
  uint64_t total_acked_ = 0;
};

void NestedMerge(ScenarioContext& ctx) {
  const std::string table = ctx.stack().FreshTable("nested");
  auto driver = ctx.Pool();
  if (!driver) return;
  NestedEdits edits(table, ctx.options().concurrency);
  ctx.Measure(*driver, edits, ctx.Ops(200'000));
  std::string get;
  AppendKeyOp(get, "get", table, "doc");
  auto reply = ctx.CallOk(*driver, get, "final read");
  if (!reply) return;
  if (std::string wrong = edits.Verify(LastReplyMember(*reply, "value")); !wrong.empty()) {
    return ctx.Fail(wrong);
  }
  SetInfo(ctx.state(), "acked_total_adds", double(edits.total_acked()));
}

const bool kRegistered = AddRegistration([] {
  RegisterScenario({.name = "add-counter/contended", .body = AddCounter, .peer = true});
  RegisterScenario({"nested-merge/contended", NestedMerge});
});

}  // namespace
}  // namespace skiff::bench
