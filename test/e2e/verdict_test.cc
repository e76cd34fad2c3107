// The end-to-end suite's verdict, proven on a real run: contention_bench's
// add-counter case against an in-process server that acknowledges one add
// in N without applying it (support/losing_add_handler.h, a handler wrapper
// installed through the bench's --test-drop-one-add-in flag) must exit 2
// (the suite's code for a failed case) and say why; the same case on an
// honest server must exit 0.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/process.h"

namespace skiff::testing {
namespace {

struct Outcome {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

Outcome RunBench(const std::vector<std::string>& extra) {
  std::vector<std::string> args = {CONTENTION_BENCH_PATH, "--store=memory", "--profile=quick",
                                   "--filter=add-counter", "--cap=20000"};
  args.insert(args.end(), extra.begin(), extra.end());
  Outcome outcome;
  Result<int> status =
      support::RunToEnd(args, &outcome.output, support::Process::Output::kStdoutAndStderr);
  outcome.exit_code = status.ok() ? *status : -1;
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
  EXPECT_EQ(run.exit_code, 2) << run.output;  // the suite's code for a failed case
  EXPECT_NE(run.output.find("verdict: FAILED"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("lost update"), std::string::npos) << run.output;
}

}  // namespace
}  // namespace skiff::testing
