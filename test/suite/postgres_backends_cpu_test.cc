// PostgresBackendsCpu (support/postgres_backends_cpu.h) on the test
// PostgreSQL: the CPU a backend runs for a query is counted, and only for
// backends present in both samples.
#include "support/postgres_backends_cpu.h"

#include <string>

#include <gtest/gtest.h>
#include <pqxx/pqxx>

#include "support/postgres.h"

#include "test/status_matchers.h"

namespace skiff::support {
namespace {

TEST(PostgresBackendsCpuTest, RanCountsOnlyBackendsInBothSamples) {
  const PostgresBackendsCpu::Sample from{{10, 1.0}, {11, 2.0}, {12, 5.0}};
  // 10 ran 0.5 s; 11 ended; 13 started; 12's pid was reused by a younger
  // process (less CPU than before): none of those three is known.
  const PostgresBackendsCpu::Sample to{{10, 1.5}, {12, 0.25}, {13, 9.0}};
  EXPECT_DOUBLE_EQ(PostgresBackendsCpu::Ran(from, to), 0.5);
  EXPECT_DOUBLE_EQ(PostgresBackendsCpu::Ran(from, from), 0.0);
}

TEST(PostgresBackendsCpuTest, CountsWhatAnotherConnectionsQueryRan) {
  Result<PostgresTarget> target = TestPostgres();
  if (!target.ok()) {
    if (InCi()) FAIL() << target.status().ToString();
    GTEST_SKIP() << "*** no PostgreSQL: " << target.status().ToString();
  }
  auto backends = PostgresBackendsCpu::Open(target->url);
  // tools/pg-up runs PostgreSQL on this machine; a container's pids would
  // be refused, and CI runs none.
  if (!backends.ok() && !InCi()) GTEST_SKIP() << backends.status().ToString();
  ASSERT_OK(backends);

  pqxx::connection worker(target->url);
  const auto pid = static_cast<pid_t>(worker.backendpid());
  auto before = (*backends)->Take();
  ASSERT_OK(before);
  ASSERT_EQ(before->count(pid), 1u) << "the worker's backend is listed";
  {
    pqxx::nontransaction tx(worker);
    // Some hundred milliseconds of the backend's CPU, more than a 10 ms tick.
    tx.exec("SELECT sum(i) FROM generate_series(1, 3000000) AS i");
  }
  auto after = (*backends)->Take();
  ASSERT_OK(after);
  ASSERT_EQ(after->count(pid), 1u);
  EXPECT_GT(after->at(pid), before->at(pid));
  EXPECT_GE(PostgresBackendsCpu::Ran(*before, *after), after->at(pid) - before->at(pid));

  worker.disconnect();  // its backend ends: not listed once it has gone
  for (int i = 0; i < 1000; ++i) {
    auto listed = (*backends)->Take();
    if (!listed.ok() || listed->count(pid) == 0) break;
    pqxx::connection round_trip(target->url);  // while it exits
  }
  auto gone = (*backends)->Take();
  ASSERT_OK(gone);
  EXPECT_EQ(gone->count(pid), 0u) << "a closed connection's backend is still listed";
}

}  // namespace
}  // namespace skiff::support
