// The mixed workload for a short budget (a long one is `skiff-faults soak`,
// which also fails when the last window's throughput falls below 0.8x the
// first): no errors, counters right, and a resident set that does not keep
// growing. Throughput per window is printed, not asserted: on a loaded
// 2-core machine a few seconds' windows differ by more than 20 % with
// nothing wrong (ops per server CPU second too, since the server batches
// less when its client is slowed).
#include <cstdio>

#include <gtest/gtest.h>

#include "support/crash_loop.h"
#include "support/temp_dir.h"

#include "test/status_matchers.h"

namespace skiff::testing {
namespace {

TEST(SoakTest, QuickMixedRunDoesNotDegrade) {
  support::TempDir dir;
  support::SoakOptions o;
  o.skiffd = SKIFFD_PATH;
  o.store_url = "sqlite:" + dir.File("skiff.db");
  o.budget = std::chrono::seconds(24);
  o.window = std::chrono::seconds(4);
  o.log = [](const std::string& line) { std::printf("soak: %s\n", line.c_str()); };
  auto report = support::RunSoak(o);
  ASSERT_OK(report);
  std::printf("soak result:\n%s\n", report->Summary().c_str());
  ASSERT_GE(report->windows.size(), 4u);
  EXPECT_EQ(report->errors, 0u);
  for (const std::string& v : report->violations) ADD_FAILURE() << v;
#ifndef __SANITIZE_ADDRESS__
  // (AddressSanitizer holds freed memory in quarantine, up to 256 MiB, so
  // under it the resident set grows whatever skiffd does.)
  EXPECT_FALSE(report->rss_keeps_growing);
#endif
  for (const support::SoakWindow& w : report->windows) EXPECT_GT(w.ops_per_s, 0);
}

}  // namespace
}  // namespace skiff::testing
