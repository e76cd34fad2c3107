#include "support/child_process.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace skiff::bench {

Result<std::unique_ptr<ChildProcess>> ChildProcess::Start(const std::vector<std::string>& argv,
                                                          const std::vector<std::string>& env,
                                                          int wait_ms) {
  if (argv.empty()) return BadRequest("no program to start");
  int out[2];
  if (pipe(out) != 0) return Unavailable("pipe failed");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, out[0]);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> env_text;
  for (char** e = environ; *e != nullptr; ++e) env_text.emplace_back(*e);
  env_text.insert(env_text.end(), env.begin(), env.end());
  std::vector<char*> envp;
  for (std::string& e : env_text) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::unique_ptr<ChildProcess> child(new ChildProcess());
  int rc = posix_spawn(&child->pid_, args[0], &actions, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]);
  if (rc != 0) {
    close(out[0]);
    child->pid_ = -1;
    return Unavailable("cannot start " + argv[0] + ": " + std::strerror(rc));
  }
  child->stdout_fd_ = out[0];
  // Read the first line byte by byte, so nothing after it is consumed.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return Unavailable(argv[0] + " printed no line in time");
    pollfd p{out[0], POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    char c;
    ssize_t n = read(out[0], &c, 1);
    if (n <= 0) return Unavailable(argv[0] + " exited before printing where it listens");
    if (c == '\n') break;
    child->first_line_ += c;
  }
  return child;
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0) {
    kill(pid_, SIGTERM);
    int status = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (waitpid(pid_, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        kill(pid_, SIGKILL);
        waitpid(pid_, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  if (stdout_fd_ >= 0) close(stdout_fd_);
}

uint16_t ChildProcess::PortFromFirstLine() const {
  // "skiffd listening on 127.0.0.1:PORT store=..." or "... 127.0.0.1:PORT".
  std::istringstream words(first_line_);
  for (std::string w; words >> w;) {
    size_t colon = w.rfind(':');
    if (colon == std::string::npos || colon + 1 >= w.size()) continue;
    const std::string digits = w.substr(colon + 1);
    if (digits.find_first_not_of("0123456789") != std::string::npos) continue;
    unsigned long p = std::strtoul(digits.c_str(), nullptr, 10);
    if (p > 0 && p < 65536) return static_cast<uint16_t>(p);
  }
  return 0;
}

double ChildProcess::CpuSeconds() const { return CpuSecondsOf(pid_); }

double CpuSecondsOf(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Fields after the command name (which may hold spaces) start past ')'.
  size_t close = text.rfind(')');
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

double ProcessCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         double(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

}  // namespace skiff::bench
