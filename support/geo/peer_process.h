// A peer database (redis-server, tarantool) started as a child process on a
// free loopback port with a fresh data directory, for one benchmark run, and
// stopped after (the directory is removed once the child is gone).
//
// The port is the kernel's pick for a socket bound to 127.0.0.1:0, released
// just before the peer binds it. Another process could take it in between,
// so a peer that exits before it answers is started again on a new port (a
// few times). Ready means: it printed its first line on stdout and accepts a
// TCP connection on the port. The child is stopped by PID when the
// PeerProcess goes (support/process.h). Not thread-safe.
#ifndef SKIFF_SUPPORT_GEO_PEER_PROCESS_H_
#define SKIFF_SUPPORT_GEO_PEER_PROCESS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "support/process.h"
#include "support/temp_dir.h"

namespace skiff::bench::geo {

// The path of `name` on PATH, or nullopt when it is not installed.
std::optional<std::string> FindProgram(const std::string& name);

// A loopback port nobody listens on at the moment.
Result<uint16_t> FreeLoopbackPort();

class PeerProcess {
 public:
  // Starts the peer `argv_for(port, data_dir)` (argv[0] a path) on a free
  // port. unavailable when it never got ready.
  static Result<std::unique_ptr<PeerProcess>> Start(
      const std::function<std::vector<std::string>(uint16_t port, const std::string& data_dir)>&
          argv_for);

  uint16_t port() const { return port_; }
  pid_t pid() const { return child_.pid(); }
  double CpuSeconds() const { return child_.CpuSeconds(); }
  // The peer's resident set in bytes; -1 once it is gone.
  int64_t ResidentBytes() const { return support::ResidentBytes(child_.pid()); }

 private:
  PeerProcess() = default;
  support::TempDir dir_;  // declared first: removed after the child stops
  support::Process child_;
  uint16_t port_ = 0;
};

}  // namespace skiff::bench::geo

#endif  // SKIFF_SUPPORT_GEO_PEER_PROCESS_H_
