// What the sync benchmark families share: a real server (the suite's Stack,
// in-process on a fresh store of the chosen kind) with sync users, and rows of about 200 bytes
// of JSON whose content depends only on their index, so every run moves the
// same bytes. Not thread-safe: set up from the benchmark's thread.
#ifndef SKIFF_BENCH_SYNC_BENCH_COMMON_H_
#define SKIFF_BENCH_SYNC_BENCH_COMMON_H_

#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <malloc.h>

#include "client/client.h"
#include "server/users.h"
#include "support/bench_registry.h"
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

inline std::string RowKey(uint64_t i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "r%08llu", static_cast<unsigned long long>(i));
  return buf;
}

// Heap bytes in use (glibc), for memory per row; info only. Large blocks
// (past glibc's mmap threshold, e.g. a device's row arena) are mapped on
// their own and counted apart from the arena's chunks: both count.
inline double HeapBytes() {
  const struct mallinfo2 info = mallinfo2();
  return static_cast<double>(info.uordblks + info.hblkhd);
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
    auto started = Stack::Start(options);
    if (!started.ok()) {
      SkipUnavailable(state, kind, started.status());
      return nullptr;
    }
    return std::unique_ptr<SyncStack>(new SyncStack(std::move(*started)));
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
};

// Pushes rows [0, n) of TaskRow into `group` as device `device`, 1,000 per
// push. Returns the last reply's cursor.
inline Result<uint64_t> LoadRows(client::Client& c, const std::string& device,
                                 const std::string& group, uint64_t n) {
  uint64_t cursor = 0;
  for (uint64_t first = 0; first < n; first += 1000) {
    doc::Value changes = doc::Value::array();
    for (uint64_t i = first; i < std::min(n, first + 1000); ++i) {
      changes.push_back({{"seq", i + 1},
                         {"table", "tasks"},
                         {"key", RowKey(i)},
                         {"group", group},
                         {"value", doc::Value::parse(TaskRow(i))}});
    }
    auto reply = c.CallSync({{"op", "push"}, {"device", device}, {"changes", changes}});
    if (!reply.ok()) return reply.status();
    cursor = (*reply)["cursor"].get<uint64_t>();
  }
  return cursor;
}

}  // namespace skiff::bench

#endif  // SKIFF_BENCH_SYNC_BENCH_COMMON_H_
