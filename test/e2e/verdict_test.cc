// The end-to-end suite's verdict, proven on a real run: contention_bench's
// add-counter case against an in-process server that acknowledges one add
// in N without applying it (Server::LoseOneAddInForTesting, a test seam set
// through the bench's --test-drop-one-add-in flag) must exit 1 and say why;
// the same case on an honest server must exit 0.
#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace skiff::testing {
namespace {

struct Outcome {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

Outcome RunBench(const std::vector<std::string>& extra) {
  std::vector<std::string> args = {CONTENTION_BENCH_PATH, "--store=memory", "--profile=quick",
                                   "--benchmark_filter=add-counter", "--cap=20000"};
  args.insert(args.end(), extra.begin(), extra.end());
  int out[2];
  if (pipe(out) != 0) return {};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDERR_FILENO);
  posix_spawn_file_actions_addclose(&actions, out[0]);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]);
  Outcome outcome;
  if (rc != 0) {
    close(out[0]);
    return outcome;
  }
  char buf[4096];
  for (ssize_t n; (n = read(out[0], buf, sizeof buf)) > 0;) outcome.output.append(buf, size_t(n));
  close(out[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  outcome.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return outcome;
}

TEST(VerdictTest, HonestServerPasses) {
  Outcome run = RunBench({});
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("verdict: ok"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("result: add-counter/contended/memory/commit"), std::string::npos)
      << run.output;
}

TEST(VerdictTest, OneLostAddInAThousandFailsTheRun) {
  Outcome run = RunBench({"--test-drop-one-add-in=1000"});
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_NE(run.output.find("verdict: FAILED"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("lost update"), std::string::npos) << run.output;
}

}  // namespace
}  // namespace skiff::testing
