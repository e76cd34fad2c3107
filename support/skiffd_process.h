// SkiffdProcess: a real skiffd started as a child process (support/
// process.h), so that what a benchmark samples (its resident set, its CPU)
// is the server's alone, not the load generator's, and so that 10,000
// connections fit in two processes' descriptor limits.
//
// Start() spawns the binary with the given flags (plus `--port 0` unless
// they name a port), reads the "skiffd listening on ADDR:PORT" line it
// prints first and keeps the pid. Stop() asks for a graceful exit (SIGTERM:
// skiffd commits what it applied) and reaps the child; Kill() ends it as a
// crash would; the destructor kills one still running. Tests use it too.
// Thread-compatible: one owner; pid() may be read by a sampler thread while
// the owner does not Start() or Stop().
#ifndef SKIFF_SUPPORT_SKIFFD_PROCESS_H_
#define SKIFF_SUPPORT_SKIFFD_PROCESS_H_

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <sys/types.h>

#include "base/status.h"
#include "support/process.h"

namespace skiff::support {

class SkiffdProcess {
 public:
  SkiffdProcess() = default;
  ~SkiffdProcess();
  SkiffdProcess(const SkiffdProcess&) = delete;
  SkiffdProcess& operator=(const SkiffdProcess&) = delete;

  // Starts `binary` with `flags`. unavailable when it cannot be spawned, or
  // exits or prints no listening line within `timeout`.
  Status Start(const std::string& binary, const std::vector<std::string>& flags,
               std::chrono::milliseconds timeout = std::chrono::seconds(20));

  // SIGTERM and wait up to `timeout` (then SIGKILL). internal when the
  // process did not exit with status 0.
  Status Stop(std::chrono::milliseconds timeout = std::chrono::seconds(60));

  // SIGKILL, as a crash would, and reap the child. A no-op when none runs.
  void Kill();

  bool running() const { return process_.running(); }
  pid_t pid() const { return process_.pid(); }
  uint16_t port() const { return port_; }
  double CpuSeconds() const { return process_.CpuSeconds(); }

 private:
  Process process_;
  uint16_t port_ = 0;
};

// Runs `argv` (argv[0] a path) to its end. Returns its exit status (-1 when
// it could not start or did not exit normally) and, when `first_line` is
// given, the first line it printed on stdout, without the newline.
int RunCommand(const std::vector<std::string>& argv, std::string* first_line = nullptr);

}  // namespace skiff::support

#endif  // SKIFF_SUPPORT_SKIFFD_PROCESS_H_
