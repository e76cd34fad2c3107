// Process: a child process started by a test or benchmark (skiffd, a peer
// server, a bench executable, a tool), the suite's one process spawner.
//
// The child gets argv[0] (a path), `argv`, this process's environment plus
// `env` ("NAME=value"), and stdout (optionally with stderr) on a pipe this
// object reads. The destructor ends a child still running: SIGTERM, five
// seconds, then SIGKILL, so a failed test never leaves a server behind; only
// the pid this object started is ever signalled.
//
// Thread-compatible: one owner; pid() may be read by a sampler thread while
// the owner does not Start(), Stop() or Kill().
#ifndef SKIFF_SUPPORT_PROCESS_H_
#define SKIFF_SUPPORT_PROCESS_H_

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <sys/types.h>

#include "base/status.h"

namespace skiff::support {

class Process {
 public:
  enum class Output { kStdout, kStdoutAndStderr };

  Process() = default;
  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  // Starts the child. unavailable when it cannot be spawned; internal when
  // one is already running.
  Status Start(const std::vector<std::string>& argv, const std::vector<std::string>& env = {},
               Output output = Output::kStdout);

  // The next line of output without its newline, waiting up to `timeout`.
  // unavailable when the child closed its output first or the time ran out.
  Result<std::string> ReadLine(std::chrono::milliseconds timeout);
  // Everything the child writes until it closes its output (usually: exits).
  std::string ReadToEnd();
  // Stops reading: later output goes nowhere (a child that writes more gets
  // EPIPE, never a full pipe).
  void CloseOutput();

  // Waits for the child to exit and returns its exit status; internal when
  // it was killed by a signal.
  Result<int> Wait();
  // SIGTERM, then waits up to `timeout` for the exit status (then SIGKILL,
  // and internal). A no-op returning 0 when no child runs.
  Result<int> Stop(std::chrono::milliseconds timeout);
  // SIGKILL, as a crash would, and reap. A no-op when none runs.
  void Kill();

  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  // User plus system CPU the child has used, from /proc/PID/stat; 0 when
  // it cannot be read.
  double CpuSeconds() const;

 private:
  void Reap(int status);
  pid_t pid_ = -1;
  int out_fd_ = -1;
  std::string buffered_;  // read past the last line returned
};

// Runs `argv` to its end and returns its exit status (internal when killed
// by a signal, unavailable when it cannot start), with its output in
// `*output` when given.
Result<int> RunToEnd(const std::vector<std::string>& argv, std::string* output = nullptr,
                     Process::Output what = Process::Output::kStdout,
                     const std::vector<std::string>& env = {});

// The port of a line that says where a server listens: the first
// "HOST:PORT" word ("skiffd listening on 127.0.0.1:7420 store=..."); 0 when
// there is none.
uint16_t PortOfListeningLine(const std::string& line);

// Resident set of process `pid` in bytes, from /proc/PID/status (VmRSS);
// -1 when it cannot be read (the process is gone).
int64_t ResidentBytes(pid_t pid);

// User plus system CPU of process `pid` so far (any process, such as a
// PostgreSQL backend), from its CPU clock (nanoseconds), else from
// /proc/PID/stat (10 ms ticks); 0 when neither can be read.
double CpuSecondsOf(pid_t pid);

// User plus system CPU of this whole process so far (getrusage).
double ProcessCpuSeconds();

}  // namespace skiff::support

#endif  // SKIFF_SUPPORT_PROCESS_H_
