#include "support/skiffd_process.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace skiff::support {
namespace {

// Reads the child's stdout until the first newline or the deadline. The pipe
// is non-blocking so a child that hangs before printing cannot hang us.
std::string ReadFirstLine(int fd, std::chrono::steady_clock::time_point deadline) {
  std::string line;
  char c = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    ssize_t n = read(fd, &c, 1);
    if (n <= 0) break;  // the child closed its stdout or exited
    if (c == '\n') return line;
    line.push_back(c);
  }
  return "";
}

// Starts `args` with its stdout on a pipe; the read end in `*out_fd`.
// Returns the pid, or -1 with errno-style `*error`.
pid_t SpawnWithStdout(std::vector<std::string> args, int* out_fd, int* error) {
  int out[2];
  if (pipe(out) != 0) {
    *error = errno;
    return -1;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, out[0]);
  // Only as stdout: a daemon the command leaves behind (pg_ctl start's
  // postmaster) would otherwise keep the pipe open, and RunCommand, which
  // reads to the end, would never return.
  posix_spawn_file_actions_addclose(&actions, out[1]);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]);
  if (rc != 0) {
    close(out[0]);
    *error = rc;
    return -1;
  }
  *out_fd = out[0];
  return pid;
}

}  // namespace

SkiffdProcess::~SkiffdProcess() { Kill(); }

Status SkiffdProcess::Start(const std::string& binary, const std::vector<std::string>& flags,
                            std::chrono::milliseconds timeout) {
  if (running()) return Internal("skiffd is already running");
  std::vector<std::string> args = {binary};
  args.insert(args.end(), flags.begin(), flags.end());
  const bool has_port = std::any_of(flags.begin(), flags.end(),
                                    [](const std::string& f) { return f.rfind("--port", 0) == 0; });
  if (!has_port) args.insert(args.end(), {"--port", "0"});
  int out = -1;
  int error = 0;
  const pid_t pid = SpawnWithStdout(std::move(args), &out, &error);
  if (pid < 0) return Unavailable("cannot start " + binary + ": " + std::strerror(error));
  pid_ = pid;
  fcntl(out, F_SETFL, fcntl(out, F_GETFL) | O_NONBLOCK);
  std::string line = ReadFirstLine(out, std::chrono::steady_clock::now() + timeout);
  // Later output goes nowhere: skiffd prints nothing more on stdout, and a
  // closed pipe would only cost it a SIGPIPE if it did.
  close(out);
  const size_t colon = line.rfind(':');
  if (line.rfind("skiffd listening on", 0) != 0 || colon == std::string::npos) {
    Kill();
    return Unavailable("skiffd did not start (first line: '" + line + "')");
  }
  port_ = static_cast<uint16_t>(std::strtoul(line.c_str() + colon + 1, nullptr, 10));
  return Status::Ok();
}

Status SkiffdProcess::Stop(std::chrono::milliseconds timeout) {
  if (!running()) return Status::Ok();
  kill(pid_, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  while (true) {
    pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) break;
    if (std::chrono::steady_clock::now() >= deadline) {
      Kill();
      return Internal("skiffd did not exit within the timeout after SIGTERM");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  pid_ = -1;
  port_ = 0;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return Internal("skiffd exited with status " + std::to_string(status));
  }
  return Status::Ok();
}

void SkiffdProcess::Kill() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
  port_ = 0;
}

int RunCommand(const std::vector<std::string>& argv, std::string* first_line) {
  int out = -1;
  int error = 0;
  const pid_t pid = SpawnWithStdout(argv, &out, &error);
  if (pid < 0) return -1;
  // Read everything, so a chatty command never blocks on a full pipe.
  std::string output;
  char buf[512];
  for (ssize_t n; (n = read(out, buf, sizeof buf)) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    output.append(buf, size_t(n));
  }
  close(out);
  int status = 0;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  if (first_line != nullptr) *first_line = output.substr(0, output.find('\n'));
  return WEXITSTATUS(status);
}

int64_t ResidentBytes(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) {
      return std::strtoll(line.c_str() + 6, nullptr, 10) * 1024;  // the kernel writes kB
    }
  }
  return -1;
}

double CpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Fields after the command name (which may hold spaces) start past ')'.
  const size_t close = text.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream fields(text.substr(close + 2));
  std::string f;
  double utime = 0, stime = 0;
  for (int i = 3; fields >> f; ++i) {
    if (i == 14) utime = std::strtod(f.c_str(), nullptr);
    if (i == 15) {
      stime = std::strtod(f.c_str(), nullptr);
      break;
    }
  }
  return (utime + stime) / double(sysconf(_SC_CLK_TCK));
}

}  // namespace skiff::support
