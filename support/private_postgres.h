// PrivatePostgres: a PostgreSQL cluster of a test's own, for the tests that
// stop, crash or freeze the server. The shared test cluster
// (support/postgres.h) serves other runs and must never be stopped.
//
// Start() runs initdb in a private temp dir (as the `postgres` user when we
// are root, since PostgreSQL refuses to run as root), then starts the
// server on 127.0.0.1 on a free port below Linux's ephemeral range, so no
// outgoing connection can take it meanwhile. The destructor stops it
// (immediate) and removes the dir. Every process is found by its pid: the
// postmaster's from postmaster.pid, the backends as its children; nothing
// else on the machine is touched.
//
// Not thread-safe: one owner.
#ifndef SKIFF_SUPPORT_PRIVATE_POSTGRES_H_
#define SKIFF_SUPPORT_PRIVATE_POSTGRES_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <sys/types.h>

#include "base/status.h"
#include "support/temp_dir.h"

namespace skiff::support {

class PrivatePostgres {
 public:
  // `settings` are extra "-c name=value" server settings.
  // unavailable (with initdb's or the server's log) when it cannot start,
  // e.g. when the machine has no PostgreSQL binaries.
  static Result<std::unique_ptr<PrivatePostgres>> Start(
      const std::vector<std::string>& settings = {});
  ~PrivatePostgres();
  PrivatePostgres(const PrivatePostgres&) = delete;
  PrivatePostgres& operator=(const PrivatePostgres&) = delete;

  // postgresql://skiff@127.0.0.1:PORT/skiff
  const std::string& url() const { return url_; }
  uint16_t port() const { return port_; }

  // pg_ctl stop -m MODE (fast, immediate, smart).
  Status Stop(const std::string& mode);
  // Starts the stopped server again on the same port.
  Status Restart();
  // SIGSTOP / SIGCONT to the postmaster and all its children: the kernel
  // still accepts connections and acknowledges packets, the server answers
  // nothing.
  Status Freeze();
  Status Thaw();
  // Runs `sql` on a connection of its own (simple query protocol).
  Status Exec(const std::string& sql);
  // The first column of the first row of `sql`, as text ("" when none).
  Result<std::string> Query(const std::string& sql);

 private:
  PrivatePostgres() = default;
  Status RunPg(const std::vector<std::string>& argv);
  std::vector<pid_t> ClusterPids() const;
  Status StartServer();

  TempDir dir_;
  std::string bin_;
  std::string data_;
  std::string url_;
  uint16_t port_ = 0;
  std::vector<std::string> settings_;
  bool running_ = false;
  bool as_postgres_ = false;  // root: run the binaries as `postgres`
};

}  // namespace skiff::support

#endif  // SKIFF_SUPPORT_PRIVATE_POSTGRES_H_
