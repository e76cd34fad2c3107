// Stack: the server a benchmark talks to, the suite's one way to stand one
// up.
//
// Four ways to have one:
//   - in-process (default): a Server on an ephemeral 127.0.0.1 port over a
//     fresh TestStore (memory, a SQLite file, or a PostgreSQL schema);
//   - child: skiffd started as a separate process (support/process.h) on the
//     same kind of fresh store (sqlite or postgres), for cases whose memory
//     must be the server's alone or whose thousands of connections need the
//     descriptors of two processes;
//   - child-tls: the same child serving wss:// with fresh test certificates
//     (support/test_certs.h) in a directory of its own; the driver trusts
//     their root and checks the server's name (127.0.0.1);
//   - peer: the minimal Bun server of bench/peers/, for side-by-side runs;
//   - attached: a running server named by a ws:// or wss:// url, with a
//     given user and secret (operators pointing the suite at a release
//     server); wss:// trusts `tls_ca` or the system store.
// A user "bench" with read and write on every table is created for the run
// (attached: the given one). Tables are named per run (FreshTable), so runs
// against one long-lived server never see each other's rows.
//
// Not thread-safe: owned by the benchmark thread that started it; pid() may
// be read by a sampler thread.
#ifndef SKIFF_SUPPORT_STACK_H_
#define SKIFF_SUPPORT_STACK_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <sys/types.h>

#include "base/status.h"
#include "server/geo_catalog.h"
#include "server/permissions.h"
#include "store/store.h"
#include "support/load_driver.h"

namespace skiff::bench {

struct StackOptions {
  std::string store = "sqlite";       // memory | sqlite | postgres
  std::string durability = "commit";  // commit | memory
  std::string server = "inprocess";   // inprocess | child | child-tls
  // Attach to this running server instead (ws:// or wss://HOST:PORT), as
  // this user.
  std::string url;
  std::string user;
  std::string secret;
  // wss:// url: the PEM roots to trust (empty: the system store), or, for
  // tests only, no check at all.
  std::string tls_ca;
  bool insecure = false;
  // Start the Bun peer (bench/peers/kv_peer.ts) with this bun binary
  // instead of a Skiff server.
  std::string bun;
  // Start the floor peer (bench/peers/floor_echo.cc) from this binary
  // instead: answers echo, login and stats, nothing else.
  std::string floor;
  // I/O threads of a server started here. One, because on this 2-core
  // machine the load driver needs the other core (see docs/benchmarks.md).
  size_t io_threads = 1;
  // More skiffd flags for a child (--pack-after-s 2 ...).
  std::vector<std::string> child_flags;
  // The skiffd binary a child runs; empty: the one built with the suite.
  // (--skiffd: two builds side by side in one run.)
  std::string skiffd;
  // Geo indexes declared in the fresh store before the server starts (in
  // the catalog, as `skiff geo add` does).
  std::vector<server::GeoSpec> geo_indexes;
  uint32_t drop_one_add_in = 0;  // test only; in-process servers only
};

class Stack {
 public:
  // unavailable when the store kind cannot be had (PostgreSQL missing) or
  // the server does not come up; bad_request for options that do not fit.
  static Result<std::unique_ptr<Stack>> Start(const StackOptions& options);
  ~Stack();
  Stack(const Stack&) = delete;
  Stack& operator=(const Stack&) = delete;

  // A pool of `connections` x `pipeline`, logged in as the bench user
  // unless `login` is false.
  Result<std::unique_ptr<LoadDriver>> Connect(size_t connections, size_t pipeline,
                                              std::chrono::milliseconds timeout,
                                              bool login = true) const;
  DriverOptions Target() const;
  uint16_t port() const;
  const std::string& user() const;
  const std::string& secret() const;

  // The store of a server running in this process (its counters count what
  // the server sent); nullptr for a child, a peer or an attached server.
  store::Store* local_store();

  // Creates another user on the server's store and returns its secret
  // (in-process and child servers only).
  Result<std::string> CreateUser(const std::string& name, const server::Permissions& permissions);
  // Creates `group` when it is new and puts `user` in it.
  Status JoinGroup(const std::string& user, const std::string& group);

  // "e2e_<stem>_<nonce>_<n>": the nonce is random per stack, n counts.
  std::string FreshTable(const std::string& stem);

  // CPU the server has used so far: the child's process, or this whole
  // process for an in-process server (the caller subtracts its own load
  // thread); nullopt for an attached server.
  std::optional<double> ServerCpuSeconds() const;
  bool in_process() const;
  // The child's (or peer's) pid; -1 otherwise.
  pid_t pid() const;
  // Whether the driver speaks wss:// to the server.
  bool tls() const;

  // Stops a child gracefully (SIGTERM: it commits what it applied) and
  // starts it again on the same store and flags; the port may change.
  Status Restart();
  // Stops a server started here; returns the final flush's error.
  Status Stop();

  const StackOptions& options() const;
  // What the JSON context should say: store kind, durability, where.
  std::string store_kind() const;
  std::string durability() const;
  std::string where() const;

 private:
  class Impl;
  explicit Stack(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace skiff::bench

#endif  // SKIFF_SUPPORT_STACK_H_
