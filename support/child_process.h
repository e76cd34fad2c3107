// ChildProcess: a server started as a separate process (skiffd, or a peer
// such as the Bun server in bench/peers/) whose first stdout line says where
// it listens.
//
// The destructor sends SIGTERM, waits up to five seconds, then SIGKILLs, so
// a failed benchmark never leaves a server behind. Not thread-safe.
#ifndef SKIFF_SUPPORT_CHILD_PROCESS_H_
#define SKIFF_SUPPORT_CHILD_PROCESS_H_

#include <memory>
#include <string>
#include <vector>

#include <sys/types.h>

#include "base/status.h"

namespace skiff::bench {

class ChildProcess {
 public:
  // Starts argv[0] (a path) with `argv` and the current environment plus
  // `env` ("NAME=value"), and reads its first line of stdout (waiting up to
  // `wait_ms`). unavailable when it cannot start or prints nothing.
  static Result<std::unique_ptr<ChildProcess>> Start(const std::vector<std::string>& argv,
                                                     const std::vector<std::string>& env,
                                                     int wait_ms = 30000);
  ~ChildProcess();

  pid_t pid() const { return pid_; }
  const std::string& first_line() const { return first_line_; }
  // The port in a first line that ends in "HOST:PORT" or holds "HOST:PORT ".
  uint16_t PortFromFirstLine() const;
  // User plus system CPU the process has used, from /proc/PID/stat.
  double CpuSeconds() const;

 private:
  ChildProcess() = default;
  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  std::string first_line_;
};

// User plus system CPU of this whole process so far (getrusage).
double ProcessCpuSeconds();

// User plus system CPU of process `pid` so far, from /proc/PID/stat; 0 when
// it cannot be read (the process is gone).
double CpuSecondsOf(pid_t pid);

}  // namespace skiff::bench

#endif  // SKIFF_SUPPORT_CHILD_PROCESS_H_
