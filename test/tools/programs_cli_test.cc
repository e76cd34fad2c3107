// Every C++ program's command line as a user meets it (skiffd, skiff and its
// commands, skiff-merge-runs, skiff-faults; skiff-compare's is in
// test/compare/cli_test.cc): --help from the table, --x v and --x=v, bare
// booleans, variables, and exit code 64 with a message naming the culprit
// for an unknown flag or a bad value. Nothing here starts a server.
#include <array>
#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <sys/wait.h>

namespace {

struct Outcome {
  int code = -1;
  std::string output;  // stdout and stderr together
};

std::string Quote(const std::string& word) {
  std::string out = "'";
  for (char c : word) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

// Runs `env` (NAME=VALUE words, may be empty) and `argv` through env(1),
// so the program sees only the variables given.
Outcome RunProgram(const std::vector<std::string>& env, const std::vector<std::string>& argv) {
  std::string command = "env -i PATH=/usr/bin:/bin";
  for (const std::string& e : env) command += " " + Quote(e);
  for (const std::string& a : argv) command += " " + Quote(a);
  command += " 2>&1";
  Outcome outcome;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return outcome;
  std::array<char, 4096> buffer;
  size_t n = 0;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0)
    outcome.output.append(buffer.data(), n);
  const int status = pclose(pipe);
  outcome.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return outcome;
}

Outcome RunProgram(const std::vector<std::string>& argv) { return RunProgram({}, argv); }

bool Has(const Outcome& o, const std::string& text) {
  return o.output.find(text) != std::string::npos;
}

TEST(SkiffdCliTest, HelpAndUsageErrors) {
  Outcome help = RunProgram({SKIFFD_PATH, "--help"});
  EXPECT_EQ(help.code, 0);
  for (const char* flag : {"--store", "--cluster", "SKIFF_CLUSTER", "--config", "SKIFF_CONFIG"}) {
    EXPECT_TRUE(Has(help, flag)) << flag;
  }
  Outcome unknown = RunProgram({SKIFFD_PATH, "--bogus"});
  EXPECT_EQ(unknown.code, 64);
  EXPECT_TRUE(Has(unknown, "--bogus")) << unknown.output;
  Outcome bad = RunProgram({SKIFFD_PATH, "--port=70000"});
  EXPECT_EQ(bad.code, 64);
  EXPECT_TRUE(Has(bad, "--port")) << bad.output;
  Outcome bool_value = RunProgram({SKIFFD_PATH, "--cluster=maybe"});
  EXPECT_EQ(bool_value.code, 64);
  Outcome from_env = RunProgram({"SKIFF_PORT=x"}, {SKIFFD_PATH});
  EXPECT_EQ(from_env.code, 64);
  EXPECT_TRUE(Has(from_env, "SKIFF_PORT")) << from_env.output;
}

TEST(SkiffdCliTest, BareClusterFlagReachesTheStore) {
  // Not "'--store' is not true or false": --cluster is true and --store is
  // read, so the store itself refuses: cluster mode needs PostgreSQL.
  Outcome o = RunProgram({SKIFFD_PATH, "--cluster", "--store", "memory:", "--port=0",
                          "--cluster-secret=0123456789abcdef"});
  EXPECT_NE(o.code, 0) << o.output;
  EXPECT_TRUE(Has(o, "cluster mode needs PostgreSQL")) << o.output;
  EXPECT_FALSE(Has(o, "true or false")) << o.output;
}

TEST(SkiffCliTest, HelpListsEveryCommand) {
  Outcome help = RunProgram({SKIFF_PATH, "--help"});
  EXPECT_EQ(help.code, 0);
  for (const char* word : {"--store", "SKIFF_STORE", "user", "group", "geo", "call", "health"}) {
    EXPECT_TRUE(Has(help, word)) << word << "\n" << help.output;
  }
  Outcome user_add = RunProgram({SKIFF_PATH, "user", "add", "--help"});
  EXPECT_EQ(user_add.code, 0);
  EXPECT_TRUE(Has(user_add, "--read")) << user_add.output;
  Outcome call = RunProgram({SKIFF_PATH, "call", "--help"});
  EXPECT_EQ(call.code, 0);
  EXPECT_TRUE(Has(call, "SKIFF_URL")) << call.output;
}

TEST(SkiffCliTest, StoreFromFlagEitherSpellingOrVariable) {
  // A memory store lives as long as the process: each command succeeds on
  // its own, which is all the flag forms need.
  EXPECT_EQ(RunProgram({SKIFF_PATH, "--store", "memory:", "user", "add", "ann"}).code, 0);
  EXPECT_EQ(RunProgram({SKIFF_PATH, "--store=memory:", "user", "add", "ann", "--read=*"}).code, 0);
  EXPECT_EQ(RunProgram({SKIFF_PATH, "user", "add", "ann", "--store", "memory:"}).code, 0);
  EXPECT_EQ(RunProgram({"SKIFF_STORE=memory:"}, {SKIFF_PATH, "group", "add", "team"}).code, 0);
  // The variable names a store that cannot open; the flag wins over it.
  EXPECT_NE(RunProgram({"SKIFF_STORE=nosuch:"}, {SKIFF_PATH, "group", "add", "team"}).code, 0);
  EXPECT_EQ(
      RunProgram({"SKIFF_STORE=nosuch:"}, {SKIFF_PATH, "--store=memory:", "group", "add", "team"})
          .code,
      0);
}

TEST(SkiffCliTest, UsageErrorsAre64) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {},
           {"--bogus"},
           {"user"},
           {"user", "add"},
           {"user", "add", "ann", "extra"},
           {"user", "rename", "ann"},
           {"group", "grant", "ann"},
           {"geo", "add", "t", "--lat", "a"},
           {"geo", "add", "t", "--lat", "a", "--lon", "b", "--point", "c"},
           {"call"},
           {"call", "get", "--timeout", "0"},
           {"call", "get", "--bogus"},
       }) {
    std::vector<std::string> argv = {SKIFF_PATH, "--store=memory:"};
    argv.insert(argv.end(), args.begin(), args.end());
    Outcome o = RunProgram(argv);
    EXPECT_EQ(o.code, 64) << ::testing::PrintToString(args) << "\n" << o.output;
    EXPECT_TRUE(Has(o, "skiff: ")) << o.output;
  }
  // skiff health keeps its own usage code (docs/deploy.md, test/image).
  EXPECT_EQ(RunProgram({SKIFF_PATH, "health", "--verbose"}).code, 2);
  EXPECT_EQ(RunProgram({SKIFF_PATH, "health", "--timeout-ms=0"}).code, 2);
}

TEST(MergeRunsCliTest, HelpAndUsage) {
  Outcome help = RunProgram({MERGE_RUNS_PATH, "--help"});
  EXPECT_EQ(help.code, 0);
  EXPECT_TRUE(Has(help, "Usage: skiff-merge-runs")) << help.output;
  EXPECT_EQ(RunProgram({MERGE_RUNS_PATH}).code, 64);
  EXPECT_EQ(RunProgram({MERGE_RUNS_PATH, "out.json"}).code, 64);
  Outcome unknown = RunProgram({MERGE_RUNS_PATH, "--bogus", "out.json", "in.json"});
  EXPECT_EQ(unknown.code, 64);
  EXPECT_TRUE(Has(unknown, "--bogus")) << unknown.output;
  // Arguments that parse reach the inputs: a missing one is bad input (3).
  EXPECT_EQ(RunProgram({MERGE_RUNS_PATH, "/nonexistent/out.json", "/nonexistent/in.json"}).code, 3);
}

TEST(FaultsCliTest, HelpAndUsage) {
  Outcome help = RunProgram({FAULTS_PATH, "--help"});
  EXPECT_EQ(help.code, 0);
  EXPECT_TRUE(Has(help, "kill-loop")) << help.output;
  Outcome kill_loop = RunProgram({FAULTS_PATH, "kill-loop", "--help"});
  EXPECT_EQ(kill_loop.code, 0);
  EXPECT_TRUE(Has(kill_loop, "--cycles")) << kill_loop.output;
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {},
           {"explode"},
           {"kill-loop", "--cycles=x"},
           {"kill-loop", "--cycles"},
           {"kill-loop", "--durability", "fast"},
           {"kill-loop", "--minutes=1"},  // soak's option
           {"soak", "--bogus"},
           {"soak", "--window-s", "0"},
       }) {
    std::vector<std::string> argv = {FAULTS_PATH};
    argv.insert(argv.end(), args.begin(), args.end());
    Outcome o = RunProgram(argv);
    EXPECT_EQ(o.code, 64) << ::testing::PrintToString(args) << "\n" << o.output;
  }
}

}  // namespace
