// skiffd through failovers of its PostgreSQL: a primary and a standby under
// pg_auto_failover (support/pg_ha.h), a load of sets on unique keys and
// contended adds, and a kill -9 of the primary's whole node (its keeper and
// its PostgreSQL, one process group) or a planned switchover. The run is
// support/failover_run.h, which `skiff-faults failover` runs longer.
// Checked as a history, Jepsen-style: every acknowledged set is read back
// with its value, through skiffd after the failover (no stale read) and
// from the store after skiffd stopped; every counter lies within
// [acknowledged adds, attempted adds]. With synchronous replication nothing
// acknowledged may be lost; without it (--async) the test reports what was
// lost and asserts nothing about it. Each run prints the manager's
// promotion time beside the first write skiffd acknowledged after it.
// SKIFF_FAILOVER_CYCLES sets the faults per run (default 1).
//
// Skipped, saying so, when pg_auto_failover is not installed, unless CI=true.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "support/failover_run.h"
#include "support/pg_ha.h"
#include "support/postgres.h"

#include "test/faults/fault_fixture.h"

namespace skiff::testing {
namespace {

int Cycles() {
  const char* env = std::getenv("SKIFF_FAILOVER_CYCLES");
  return std::clamp(env ? std::atoi(env) : 1, 1, 1000);
}

class PostgresFailoverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!support::PgHa::Installed()) {
      if (support::InCi()) FAIL() << "pg_autoctl not installed (tools/setup installs it)";
      GTEST_SKIP() << "*** pg_auto_failover not installed (postgresql-15-auto-failover, "
                      "pg-auto-failover-cli: tools/setup): failover cases NOT run";
    }
  }

  // Runs the failovers and prints a line per cycle and the summary.
  support::FailoverReport Run(const std::string& kind, bool synchronous) {
    support::FailoverOptions o;
    o.skiffd = SKIFFD_PATH;
    o.tools_dir = SKIFF_SOURCE_DIR "/tools";
    o.kind = kind;
    o.cycles = Cycles();
    o.synchronous = synchronous;
    o.tag = "failover-test-" + kind;
    o.log = [](const std::string& line) {
      std::printf("%s\n", line.c_str());
      std::fflush(stdout);
    };
    Result<support::FailoverReport> report = support::RunFailover(o);
    EXPECT_OK(report);
    if (!report.ok()) return {};
    std::printf("%s\n", report->Summary().c_str());
    std::fflush(stdout);
    for (const std::string& v : report->violations) ADD_FAILURE() << v;
    return *std::move(report);
  }

  // The checks both synchronous cases make.
  static void ExpectNothingLost(const support::FailoverReport& out) {
    EXPECT_GT(out.acked_sets, 0u);
    EXPECT_EQ(out.lost, 0u) << "acknowledged sets missing from the store after the failover";
    EXPECT_EQ(out.stale_reads, 0u) << "reads through skiffd older than acknowledged sets";
    EXPECT_EQ(out.counters_below, 0) << "acknowledged adds lost: " << out.counters;
    EXPECT_EQ(out.counters_above, 0) << "adds applied twice: " << out.counters;
    // Writes came back after every fault; how soon is failover_bench's
    // figure, not a bound here (a loaded machine stretches the promotion).
    for (const support::FailoverCycle& c : out.cycles) EXPECT_GT(c.to_first_write_s, 0);
  }
};

// With a synchronous standby an acknowledged write survives the primary's
// loss: nothing lost, nothing stale, every counter within its bounds, and
// writes accepted again.
TEST_F(PostgresFailoverTest, SynchronousStandbyLosesNothing) {
  ExpectNothingLost(Run("kill", /*synchronous=*/true));
}

// A planned switchover under the same load: the primary drains, the
// standby is promoted, the old primary follows it. Nothing acknowledged
// lost, no stale read.
TEST_F(PostgresFailoverTest, SwitchoverLosesNothing) {
  ExpectNothingLost(Run("switchover", /*synchronous=*/true));
}

// Without synchronous replication a commit is acknowledged before the
// standby has it: the run reports what the failover lost (it may lose
// nothing), and still checks that no counter went over its attempts.
TEST_F(PostgresFailoverTest, AsynchronousStandbyMayLose) {
  const support::FailoverReport out = Run("kill", /*synchronous=*/false);
  EXPECT_GT(out.acked_sets, 0u);
  EXPECT_EQ(out.counters_above, 0) << "adds applied twice: " << out.counters;
  std::printf(
      "without synchronous replication: %zu of %zu acknowledged sets lost, %lld "
      "acknowledged adds lost\n",
      out.lost, out.acked_sets, static_cast<long long>(out.counters_below));
}

}  // namespace
}  // namespace skiff::testing
