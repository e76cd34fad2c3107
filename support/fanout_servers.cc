#include "support/fanout_servers.h"

#include <chrono>

#include <unistd.h>

#include "server/permissions.h"
#include "server/users.h"
#include "store/store.h"
#include "support/geo/peer_process.h"
#include "support/process.h"
#include "support/skiffd_process.h"
#include "support/temp_dir.h"

namespace skiff::bench {
namespace {

constexpr char kRedis[] = "/usr/bin/redis-server";
constexpr char kNats[] = "/usr/sbin/nats-server";
constexpr char kNode[] = "/usr/bin/node";
// The table skiffd's writer sets and its watchers watch.
constexpr char kTable[] = "fanout";

class SkiffdServer : public FanoutServer {
 public:
  // `flags`: more skiffd flags, after the bench's own.
  Status Start(const FanoutPaths& paths, std::vector<std::string> extra) {
    const std::string url = "sqlite:" + dir_.File("fanout.db");
    {
      Result<std::unique_ptr<store::Store>> store = store::OpenStore(url);
      if (!store.ok()) return store.status();
      Result<std::string> secret =
          server::CreateUser(**store, "bench", server::Permissions({"*"}, {"*"}));
      if (!secret.ok()) return secret.status();
      secret_ = *secret;
    }
    // One I/O thread, as each peer has one event loop.
    std::vector<std::string> flags = {"--store", url, "--io-threads", "1"};
    extra.insert(extra.end(), paths.skiffd_args.begin(), paths.skiffd_args.end());
    flags.insert(flags.end(), extra.begin(), extra.end());
    for (const std::string& a : extra) set_up_ += " " + a;
    return skiffd_.Start(paths.skiffd, flags);
  }
  pid_t pid() const override { return skiffd_.pid(); }
  uint16_t port() const override { return skiffd_.port(); }
  std::unique_ptr<FanoutClient> NewClient() const override {
    return NewSkiffdFanoutClient({"bench", secret_}, kTable);
  }
  std::unique_ptr<StalledWatcher> NewStalledWatcher() const override {
    return std::make_unique<StalledWatcher>(FanoutLogin{"bench", secret_}, kTable);
  }
  std::string SetUp() const override { return "SQLite, 1 I/O thread" + set_up_; }

 private:
  support::TempDir dir_;
  support::SkiffdProcess skiffd_;
  std::string secret_;
  std::string set_up_;
};

// The Bun and the Node peer: a script printing "... listening on ADDR:PORT".
class WsPeerServer : public FanoutServer {
 public:
  Status Start(const std::vector<std::string>& argv, std::string set_up) {
    set_up_ = std::move(set_up);
    SKIFF_RETURN_IF_ERROR(process_.Start(argv, {"PORT=0", "SKIFF_PEER_SECRET=" + secret_}));
    Result<std::string> line = process_.ReadLine(std::chrono::seconds(30));
    if (!line.ok()) return line.status();
    port_ = support::PortOfListeningLine(*line);
    if (port_ == 0) return Unavailable(argv[0] + " said '" + *line + "'");
    return Status::Ok();
  }
  pid_t pid() const override { return process_.pid(); }
  uint16_t port() const override { return port_; }
  std::unique_ptr<FanoutClient> NewClient() const override {
    return NewWsPeerFanoutClient({"bench", secret_});
  }
  std::string SetUp() const override { return set_up_; }

 private:
  support::Process process_;
  uint16_t port_ = 0;
  std::string secret_ = "peer-secret";
  std::string set_up_;
};

// redis-server or nats-server on a free port (support/geo/peer_process.h).
class TcpPeerServer : public FanoutServer {
 public:
  TcpPeerServer(bool redis, std::unique_ptr<geo::PeerProcess> peer)
      : redis_(redis), peer_(std::move(peer)) {}
  pid_t pid() const override { return peer_->pid(); }
  uint16_t port() const override { return peer_->port(); }
  std::unique_ptr<FanoutClient> NewClient() const override {
    return redis_ ? NewRedisFanoutClient() : NewNatsFanoutClient();
  }
  std::string SetUp() const override { return redis_ ? "no persistence, RESP2" : "no persistence"; }

 private:
  bool redis_;
  std::unique_ptr<geo::PeerProcess> peer_;
};

}  // namespace

const std::vector<std::string>& FanoutServerNames() {
  // skiffd-sendmsg: skiffd with io_uring off, one sendmsg per delivery,
  // so that what the batched sends gain is read side by side.
  static const std::vector<std::string> names = {"bun-peer", "node-peer", "redis",
                                                 "nats",     "skiffd",    "skiffd-sendmsg"};
  return names;
}

std::string FanoutServer::Missing(const std::string& name, const FanoutPaths& paths) {
  if (name == "bun-peer" && access(paths.bun.c_str(), X_OK) != 0) {
    return "Bun not found at " + paths.bun + " (npm ci --prefix bench/peers installs it)";
  }
  if (name == "node-peer") {
    if (access(kNode, X_OK) != 0) return std::string("node not found at ") + kNode;
    const std::string ws = paths.sources + "/bench/peers/node_modules/ws/package.json";
    if (access(ws.c_str(), R_OK) != 0) {
      return "the ws package is not in bench/peers/node_modules (npm ci --prefix bench/peers)";
    }
  }
  if (name == "redis" && access(kRedis, X_OK) != 0) {
    return std::string("redis-server not found at ") + kRedis + " (Debian package redis-server)";
  }
  if (name == "nats" && access(kNats, X_OK) != 0) {
    return std::string("nats-server not found at ") + kNats + " (Debian package nats-server)";
  }
  return "";
}

Result<std::unique_ptr<FanoutServer>> FanoutServer::Start(const std::string& name,
                                                          const FanoutPaths& paths) {
  const std::string peers = paths.sources + "/bench/peers/";
  if (name == "skiffd" || name == "skiffd-sendmsg") {
    auto s = std::make_unique<SkiffdServer>();
    std::vector<std::string> extra;
    if (name == "skiffd-sendmsg") extra.push_back("--io-uring=false");
    SKIFF_RETURN_IF_ERROR(s->Start(paths, std::move(extra)));
    return std::unique_ptr<FanoutServer>(std::move(s));
  }
  if (name == "bun-peer" || name == "node-peer") {
    auto s = std::make_unique<WsPeerServer>();
    if (name == "bun-peer") {
      SKIFF_RETURN_IF_ERROR(s->Start({paths.bun, "run", peers + "fanout_peer.ts"},
                                     "Bun.serve, ws.subscribe / server.publish"));
    } else {
      SKIFF_RETURN_IF_ERROR(
          s->Start({kNode, peers + "fanout_peer_node.mjs"}, "Node + ws, a send per subscriber"));
    }
    return std::unique_ptr<FanoutServer>(std::move(s));
  }
  if (name == "redis") {
    // More clients than its default 10,000 (10,000 watchers and a writer).
    auto peer = geo::PeerProcess::Start([](uint16_t port, const std::string& dir) {
      return std::vector<std::string>{kRedis,
                                      "--port",
                                      std::to_string(port),
                                      "--bind",
                                      "127.0.0.1",
                                      "--save",
                                      "",
                                      "--appendonly",
                                      "no",
                                      "--dir",
                                      dir,
                                      "--maxclients",
                                      "15000"};
    });
    if (!peer.ok()) return peer.status();
    return std::unique_ptr<FanoutServer>(new TcpPeerServer(true, std::move(*peer)));
  }
  if (name == "nats") {
    // nats-server logs to stderr; a line on stdout says it started (the
    // port is then polled) and its log goes to a file of its own.
    auto peer = geo::PeerProcess::Start([](uint16_t port, const std::string& dir) {
      return std::vector<std::string>{"/bin/sh", "-c",
                                      std::string("echo starting; exec ") + kNats +
                                          " -a 127.0.0.1 -p " + std::to_string(port) + " -l " +
                                          dir + "/nats.log"};
    });
    if (!peer.ok()) return peer.status();
    return std::unique_ptr<FanoutServer>(new TcpPeerServer(false, std::move(*peer)));
  }
  return Unavailable("no fan-out server named '" + name + "'");
}

}  // namespace skiff::bench
