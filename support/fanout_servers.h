// The servers the fan-out family (bench/fanout_bench.cc) compares, each a
// child process on 127.0.0.1 with one I/O thread or event loop: skiffd on
// SQLite (its default durability), the Bun and the Node pub/sub peers of
// bench/peers/, redis-server and nats-server. Each comes with the
// FanoutClient that speaks its protocol (support/fanout_client.h).
//
// Not thread-safe: one owner.
#ifndef SKIFF_SUPPORT_FANOUT_SERVERS_H_
#define SKIFF_SUPPORT_FANOUT_SERVERS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <sys/types.h>

#include "base/status.h"
#include "support/fanout_client.h"

namespace skiff::bench {

// Where the programs are. `skiffd` is the binary under test; `sources` the
// repository (for bench/peers/); `bun` the Bun binary.
struct FanoutPaths {
  std::string skiffd;
  std::vector<std::string> skiffd_args;  // added to skiffd's flags
  std::string sources;
  std::string bun;
};

// The servers, in the order the family runs them: the peers first.
const std::vector<std::string>& FanoutServerNames();  // skiffd, bun-peer, ...

class FanoutServer {
 public:
  virtual ~FanoutServer() = default;

  // Starts server `name` (one of FanoutServerNames()). unavailable when it
  // cannot start or does not listen.
  static Result<std::unique_ptr<FanoutServer>> Start(const std::string& name,
                                                     const FanoutPaths& paths);
  // Why server `name` cannot run here (a program not installed), or empty.
  static std::string Missing(const std::string& name, const FanoutPaths& paths);

  virtual pid_t pid() const = 0;
  virtual uint16_t port() const = 0;
  // A new client speaking this server's protocol.
  virtual std::unique_ptr<FanoutClient> NewClient() const = 0;
  // A watcher that stops reading (support/fanout_client.h), for a server
  // that bounds what waits for a slow reader: skiffd only; null for the
  // others, which have no such bound.
  virtual std::unique_ptr<StalledWatcher> NewStalledWatcher() const { return nullptr; }
  // How it is set up, for the case's label.
  virtual std::string SetUp() const = 0;
};

}  // namespace skiff::bench

#endif  // SKIFF_SUPPORT_FANOUT_SERVERS_H_
