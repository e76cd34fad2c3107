#include "support/process.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char** environ;

namespace skiff::support {

Process::~Process() {
  if (running()) (void)Stop(std::chrono::seconds(5));
  CloseOutput();
}

Status Process::Start(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                      Output output) {
  if (running()) return Internal("a child is already running (pid " + std::to_string(pid_) + ")");
  if (argv.empty()) return BadRequest("no program to start");
  CloseOutput();
  buffered_.clear();
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) return Unavailable(std::string("pipe: ") + std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  if (output == Output::kStdoutAndStderr) {
    posix_spawn_file_actions_adddup2(&actions, out[1], STDERR_FILENO);
  }
  std::vector<std::string> args = argv;
  std::vector<char*> arg_ptrs;
  for (std::string& a : args) arg_ptrs.push_back(a.data());
  arg_ptrs.push_back(nullptr);
  std::vector<std::string> env_text;
  for (char** e = environ; *e != nullptr; ++e) env_text.emplace_back(*e);
  env_text.insert(env_text.end(), env.begin(), env.end());
  std::vector<char*> env_ptrs;
  for (std::string& e : env_text) env_ptrs.push_back(e.data());
  env_ptrs.push_back(nullptr);
  pid_t pid = -1;
  const int rc =
      posix_spawn(&pid, arg_ptrs[0], &actions, nullptr, arg_ptrs.data(), env_ptrs.data());
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]);
  if (rc != 0) {
    close(out[0]);
    return Unavailable("cannot start " + argv[0] + ": " + std::strerror(rc));
  }
  pid_ = pid;
  out_fd_ = out[0];
  return Status::Ok();
}

Result<std::string> Process::ReadLine(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (const size_t nl = buffered_.find('\n'); nl != std::string::npos) {
      std::string line = buffered_.substr(0, nl);
      buffered_.erase(0, nl + 1);
      return line;
    }
    if (out_fd_ < 0) return Unavailable("the child's output is closed");
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return Unavailable("no line from the child in time");
    pollfd p{out_fd_, POLLIN, 0};
    const int ready = poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno != EINTR) return Unavailable("poll failed");
    if (ready <= 0) continue;
    char buf[4096];
    const ssize_t n = read(out_fd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Unavailable("the child closed its output (" + buffered_ + ")");
    buffered_.append(buf, size_t(n));
  }
}

std::string Process::ReadToEnd() {
  std::string all = std::move(buffered_);
  buffered_.clear();
  if (out_fd_ < 0) return all;
  char buf[4096];
  for (;;) {
    const ssize_t n = read(out_fd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    all.append(buf, size_t(n));
  }
  CloseOutput();
  return all;
}

void Process::CloseOutput() {
  if (out_fd_ >= 0) close(out_fd_);
  out_fd_ = -1;
}

void Process::Reap(int) { pid_ = -1; }

Result<int> Process::Wait() {
  if (!running()) return 0;
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0) {
    if (errno != EINTR) return Internal("waitpid failed");
  }
  Reap(status);
  if (!WIFEXITED(status))
    return Internal("the child was killed by signal " + std::to_string(WTERMSIG(status)));
  return WEXITSTATUS(status);
}

Result<int> Process::Stop(std::chrono::milliseconds timeout) {
  if (!running()) return 0;
  kill(pid_, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  while (waitpid(pid_, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() >= deadline) {
      Kill();
      return Internal("the child did not exit within the timeout after SIGTERM");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  Reap(status);
  if (!WIFEXITED(status))
    return Internal("the child was killed by signal " + std::to_string(WTERMSIG(status)));
  return WEXITSTATUS(status);
}

void Process::Kill() {
  if (!running()) return;
  kill(pid_, SIGKILL);
  int status = 0;
  waitpid(pid_, &status, 0);
  Reap(status);
}

double Process::CpuSeconds() const { return CpuSecondsOf(pid_); }

double CpuSecondsOf(pid_t pid) {
  // The process's CPU clock counts every thread in nanoseconds; /proc's
  // ticks (10 ms) are too coarse for the CPU per operation of a short case.
  clockid_t clock;
  timespec ts{};
  if (clock_getcpuclockid(pid, &clock) == 0 && clock_gettime(clock, &ts) == 0) {
    return double(ts.tv_sec) + double(ts.tv_nsec) / 1e9;
  }
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Fields after the command name (which may hold spaces) start past ')'.
  const size_t close_paren = text.rfind(')');
  if (close_paren == std::string::npos) return 0;
  std::istringstream fields(text.substr(close_paren + 2));
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

Result<int> RunToEnd(const std::vector<std::string>& argv, std::string* output,
                     Process::Output what, const std::vector<std::string>& env) {
  Process p;
  SKIFF_RETURN_IF_ERROR(p.Start(argv, env, what));
  // Read everything first, so a chatty child never blocks on a full pipe.
  std::string all = p.ReadToEnd();
  if (output != nullptr) *output = std::move(all);
  return p.Wait();
}

uint16_t PortOfListeningLine(const std::string& line) {
  std::istringstream words(line);
  for (std::string w; words >> w;) {
    const size_t colon = w.rfind(':');
    if (colon == std::string::npos || colon + 1 >= w.size()) continue;
    const std::string digits = w.substr(colon + 1);
    if (digits.size() > 5 || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    const unsigned long p = std::strtoul(digits.c_str(), nullptr, 10);
    if (p > 0 && p < 65536) return static_cast<uint16_t>(p);
  }
  return 0;
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

double ProcessCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         double(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

}  // namespace skiff::support
