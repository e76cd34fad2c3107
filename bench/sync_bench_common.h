// What the sync benchmark families share: a real server (the suite's Stack,
// in-process on a fresh store of the chosen kind) with sync users, the CPU
// its threads run, and rows of about 200 bytes of JSON whose content depends
// only on their index, so every run moves the same bytes. Not thread-safe:
// set up from the benchmark's thread.
#ifndef SKIFF_BENCH_SYNC_BENCH_COMMON_H_
#define SKIFF_BENCH_SYNC_BENCH_COMMON_H_

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <malloc.h>
#include <sys/types.h>

#include "client/client.h"
#include "client/device.h"
#include "doc/document.h"
#include "server/users.h"
#include "support/bench_registry.h"
#include "support/counters.h"
#include "support/stack.h"

namespace skiff::bench {

// A task row of about 200 bytes of JSON.
inline std::string TaskRow(uint64_t i) {
  std::string title = "task " + std::to_string(i) + " ";
  uint64_t x = i * 0x9E3779B97F4A7C15ull + 7;
  while (title.size() < 120) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    title += static_cast<char>('a' + x % 26);
  }
  return "{\"id\":" + std::to_string(i) + ",\"title\":\"" + title +
         "\",\"done\":false,\"owner\":\"user-" + std::to_string(i % 97) +
         "\",\"priority\":" + std::to_string(i % 5) + ",\"tags\":[\"sync\",\"bench\"]}";
}

// TaskRow(i) with its members in key order, the text a parsed document
// prints: what a push of a document tree used to send, so the server parses
// the same bytes it did then.
inline std::string SortedTaskRow(uint64_t i) { return doc::Dump(doc::Value::parse(TaskRow(i))); }

inline std::string RowKey(uint64_t i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "r%08llu", static_cast<unsigned long long>(i));
  return buf;
}

// TaskRow(i) for every i < n, made once so checks do not rebuild them.
inline std::vector<std::string> TaskRows(uint64_t n) {
  std::vector<std::string> rows;
  rows.reserve(n);
  for (uint64_t i = 0; i < n; ++i) rows.push_back(TaskRow(i));
  return rows;
}

// Whether JSON text `got` is the document `want`: the same text, or the
// same document written differently.
inline bool SameDocument(const std::string& got, const std::string& want) {
  return got == want || doc::Value::parse(got, nullptr, false) == doc::Value::parse(want);
}

// The rows RowKey(i) of group "team", table "tasks" that `device` holds
// with the document rows[i].
inline uint64_t RowsHeld(const client::Device& device, const std::vector<std::string>& rows) {
  uint64_t held = 0;
  for (uint64_t i = 0; i < rows.size(); ++i) {
    std::optional<std::string> got = device.Get({"team", "tasks", RowKey(i)});
    held += got.has_value() && SameDocument(*got, rows[i]);
  }
  return held;
}

// Heap bytes in use (glibc), for memory per row; info only. Large blocks
// (past glibc's mmap threshold, e.g. a device's row arena) are mapped on
// their own and counted apart from the arena's chunks: both count.
inline double HeapBytes() {
  const struct mallinfo2 info = mallinfo2();
  return static_cast<double>(info.uordblks + info.hblkhd);
}

// CPU time thread `tid` of process `pid` has run so far, in seconds, from
// /proc schedstat (nanoseconds, where /proc stat has clock ticks of 10 ms:
// too coarse for a wake-up of a few milliseconds); 0 once it is gone.
inline double ThreadCpuSeconds(const std::string& pid, pid_t tid) {
  std::ifstream in("/proc/" + pid + "/task/" + std::to_string(tid) + "/schedstat");
  uint64_t nanos = 0;
  return in >> nanos ? double(nanos) / 1e9 : 0;
}

// The ids of the threads of process `pid` ("self" for this one) now.
inline std::vector<pid_t> ThreadIds(const std::string& pid = "self") {
  std::vector<pid_t> ids;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/" + pid + "/task", ec)) {
    ids.push_back(static_cast<pid_t>(std::stol(entry.path().filename().string())));
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

// CPU all threads of process `pid` have run so far, in seconds (a thread
// that ended takes its time with it: the figure is for long-lived threads).
inline double ProcessThreadsCpuSeconds(pid_t pid) {
  const std::string id = std::to_string(pid);
  double seconds = 0;
  for (pid_t tid : ThreadIds(id)) seconds += ThreadCpuSeconds(id, tid);
  return seconds;
}

// Sets the judged server_cpu_us_per_op: `cpu_seconds` of server CPU over a
// measured span of `ops` operations.
inline void ReportServerCpu(benchmark::State& state, double cpu_seconds, uint64_t ops) {
  if (ops == 0) return;
  SetJudged(state, "server_cpu_us_per_op", 1e6 * std::max(0.0, cpu_seconds) / double(ops));
}

// The sync families' view of the suite's Stack (support/stack.h): an
// in-process server on a fresh store of `kind`, and users in sync groups.
class SyncStack {
 public:
  // nullptr after ending the case (skip for a missing PostgreSQL, error
  // otherwise).
  static std::unique_ptr<SyncStack> Open(benchmark::State& state, const std::string& kind) {
    StackOptions options;
    options.store = kind;
    const std::vector<pid_t> before = ThreadIds();
    auto started = Stack::Start(options);
    if (!started.ok()) {
      SkipUnavailable(state, kind, started.status());
      return nullptr;
    }
    std::unique_ptr<SyncStack> stack(new SyncStack(std::move(*started)));
    // The threads the start left running are the server's (its I/O,
    // commit, sync and store threads); this thread and the clients' threads,
    // started later, are not counted. A thread the server started later
    // would be missed: none does in these families.
    const std::vector<pid_t> after = ThreadIds();
    std::set_difference(after.begin(), after.end(), before.begin(), before.end(),
                        std::back_inserter(stack->server_threads_));
    return stack;
  }

  // CPU the server's threads have run so far. The process's total would
  // count the clients' threads and this one too, which here are busier than
  // the server (a device applying its bootstrap, for one).
  double ServerCpuSeconds() const {
    double seconds = 0;
    for (pid_t tid : server_threads_) seconds += ThreadCpuSeconds("self", tid);
    return seconds;
  }

  store::Store& store() { return *stack_->local_store(); }
  uint16_t port() const { return stack_->port(); }

  // Creates `user` in `group` (the group is created on first use).
  Status AddUser(const std::string& user, const std::string& group) {
    Result<std::string> secret = stack_->CreateUser(user, server::Permissions());
    if (!secret.ok()) return secret.status();
    secrets_[user] = *secret;
    return stack_->JoinGroup(user, group);
  }
  const std::string& secret(const std::string& user) { return secrets_[user]; }

  client::ClientOptions ClientFor(const std::string& user) {
    client::ClientOptions o;
    o.port = port();
    o.user = user;
    o.secret = secrets_[user];
    o.request_timeout = std::chrono::seconds(60);
    return o;
  }

 private:
  explicit SyncStack(std::unique_ptr<Stack> stack) : stack_(std::move(stack)) {}
  std::unique_ptr<Stack> stack_;
  std::map<std::string, std::string> secrets_;
  std::vector<pid_t> server_threads_;  // started with the server
};

// Pushes rows [0, n) of TaskRow into `group` as device `device`, 1,000 per
// push. Returns the last reply's cursor.
inline Result<uint64_t> LoadRows(client::Client& c, const std::string& device,
                                 const std::string& group, uint64_t n) {
  uint64_t cursor = 0;
  for (uint64_t first = 0; first < n; first += 1000) {
    std::vector<client::SyncChange> changes;
    for (uint64_t i = first; i < std::min(n, first + 1000); ++i) {
      changes.push_back({i + 1, {group, "tasks", RowKey(i)}, SortedTaskRow(i)});
    }
    SKIFF_ASSIGN_OR_RETURN(client::PushReply reply, c.Push({device, changes}));
    cursor = reply.cursor;
  }
  return cursor;
}

// Checks every synced row of `group` in `store` against `want` (key -> the
// row's JSON): each wanted key once with an equal document, and no other
// row. Returns the rows that matched; an error names the first difference.
inline Result<uint64_t> CheckSyncRows(store::Store& store, const std::string& group,
                                      const std::map<std::string, std::string>& want) {
  uint64_t matched = 0;
  store::SyncRowCursor after;
  for (;;) {
    SKIFF_ASSIGN_OR_RETURN(store::SyncRowPage page, store.ScanSyncRows({group}, after, 1000));
    for (const store::SyncRow& row : page.rows) {
      auto it = want.find(row.key);
      if (it == want.end()) return Internal("an unexpected synced row " + row.key);
      if (!SameDocument(row.value, it->second)) {
        return Internal("synced row " + row.key + " holds " + row.value);
      }
      ++matched;
    }
    if (!page.next) break;
    after = *page.next;
  }
  if (matched != want.size()) {
    return Internal("the store holds " + std::to_string(matched) + " of " +
                    std::to_string(want.size()) + " synced rows");
  }
  return matched;
}

}  // namespace skiff::bench

#endif  // SKIFF_BENCH_SYNC_BENCH_COMMON_H_
