// When a pack is due (geo/repack_policy.h): a quarter of the points changed
// and a query waiting, or, with no query, an index's worth of changes or a
// quarter of the slots freed.
#include "geo/repack_policy.h"

#include <gtest/gtest.h>

namespace skiff::geo {
namespace {

RepackPolicy WithMin(size_t min_changes) {
  RepackPolicy policy;
  policy.min_changes = min_changes;
  return policy;
}

TEST(RepackPolicyTest, AQuarterOfThePointsAndNeverBelowTheMinimum) {
  const RepackPolicy policy = WithMin(100);
  EXPECT_EQ(policy.QuarterOf(0), 100u);
  EXPECT_EQ(policy.QuarterOf(400), 100u);
  EXPECT_EQ(policy.QuarterOf(1000), 250u);
  EXPECT_FALSE(policy.EnoughChanges(249, 1000));
  EXPECT_TRUE(policy.EnoughChanges(250, 1000));
}

TEST(RepackPolicyTest, AQueryMakesAQuarterOfChangesEnough) {
  const RepackPolicy policy = WithMin(100);
  EXPECT_FALSE(policy.Due(249, 1000, 0, /*queried=*/true));
  EXPECT_TRUE(policy.Due(250, 1000, 0, /*queried=*/true));
}

TEST(RepackPolicyTest, WithoutAQueryAPackWaitsForAnIndexWorthOfChanges) {
  const RepackPolicy policy = WithMin(100);
  EXPECT_FALSE(policy.Due(250, 1000, 0, /*queried=*/false));
  EXPECT_FALSE(policy.Due(999, 1000, 0, /*queried=*/false));
  EXPECT_TRUE(policy.Due(1000, 1000, 0, /*queried=*/false));
}

TEST(RepackPolicyTest, WithoutAQueryAQuarterOfSlotsFreedIsEnough) {
  const RepackPolicy policy = WithMin(100);
  EXPECT_FALSE(policy.Due(250, 1000, 249, /*queried=*/false));
  EXPECT_TRUE(policy.Due(250, 1000, 250, /*queried=*/false));
  // Freed slots alone are not: the changes must be enough too.
  EXPECT_FALSE(policy.Due(249, 1000, 500, /*queried=*/false));
}

TEST(RepackPolicyTest, ABulkLoadPacksOnceAtTheMinimum) {
  const RepackPolicy policy = WithMin(100);
  // Inserts only, no query: due when the changes reach the minimum...
  EXPECT_FALSE(policy.Due(99, 99, 0, /*queried=*/false));
  EXPECT_TRUE(policy.Due(100, 100, 0, /*queried=*/false));
  // ...and never again while the inserts since stay fewer than the points.
  EXPECT_FALSE(policy.Due(900, 1000, 0, /*queried=*/false));
}

}  // namespace
}  // namespace skiff::geo
