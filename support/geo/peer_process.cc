#include "support/geo/peer_process.h"

#include <chrono>
#include <cstdlib>
#include <sstream>
#include <thread>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace skiff::bench::geo {
namespace {

sockaddr_in Loopback(uint16_t port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  return addr;
}

bool Accepts(uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  const sockaddr_in addr = Loopback(port);
  const bool ok = connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0;
  close(fd);
  return ok;
}

}  // namespace

std::optional<std::string> FindProgram(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (dir.empty()) continue;
    const std::string candidate = dir + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return std::nullopt;
}

Result<uint16_t> FreeLoopbackPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return Unavailable("socket failed");
  sockaddr_in addr = Loopback(0);
  socklen_t len = sizeof addr;
  const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
                  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  close(fd);
  if (!ok) return Unavailable("cannot bind a loopback port");
  return ntohs(addr.sin_port);
}

Result<std::unique_ptr<PeerProcess>> PeerProcess::Start(
    const std::function<std::vector<std::string>(uint16_t port, const std::string& data_dir)>&
        argv_for) {
  constexpr int kAttempts = 4;
  Status last = Unavailable("not started");
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    Result<uint16_t> port = FreeLoopbackPort();
    if (!port.ok()) return port.status();
    std::unique_ptr<PeerProcess> peer(new PeerProcess());
    const std::vector<std::string> argv = argv_for(*port, peer->dir_.path().string());
    support::Process& child = peer->child_;
    // A child that cannot start, or exits before its first line, most
    // likely lost the port to someone else meanwhile: try another one.
    if (Status s = child.Start(argv); !s.ok()) {
      last = s;
      continue;
    }
    Result<std::string> first_line = child.ReadLine(std::chrono::seconds(20));
    if (!first_line.ok()) {
      last = Unavailable(argv[0] + " printed no line: " + first_line.status().message());
      continue;  // the child is stopped as `peer` goes
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!Accepts(*port) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (!Accepts(*port)) {
      last = Unavailable(argv[0] + " printed '" + *first_line +
                         "' but does not accept connections on 127.0.0.1:" + std::to_string(*port));
      continue;
    }
    peer->port_ = *port;
    return peer;
  }
  return last;
}

}  // namespace skiff::bench::geo
