#include "compare/mann_whitney.h"

#include <vector>

#include <gtest/gtest.h>

namespace skiff::compare {
namespace {

// Reference values were computed once with SciPy 1.10.1 (Debian's
// python3-scipy), run as /usr/bin/python3:
//   scipy.stats.mannwhitneyu(x, y, alternative="two-sided", method=M)
// with M = "exact" and M = "asymptotic"; statistic is U of x.
struct Case {
  const char* name;
  std::vector<double> x;
  std::vector<double> y;
  double u_x;
  double p_exact;
  double p_asymptotic;
};

const std::vector<Case>& Cases() {
  static const std::vector<Case> cases = {
      {"no_ties_3v3", {1, 2, 3}, {4, 5, 6}, 0.0, 0.1, 0.08085559837005224},
      {"no_ties_4v4",
       {1.1, 2.2, 3.3, 4.4},
       {5.5, 6.6, 7.7, 8.8},
       0.0,
       0.02857142857142857,
       0.03038282197657749},
      {"interleaved_5v6",
       {1, 3, 5, 7, 9},
       {2, 4, 6, 8, 10, 12},
       10.0,
       0.42857142857142855,
       0.41131379177625893},
      {"shifted_9v9_one_tie",
       {10.1, 10.4, 9.8, 10.0, 10.2, 9.9, 10.3, 10.05, 9.95},
       {10.6, 10.9, 10.2, 10.5, 11.0, 10.45, 10.7, 10.35, 10.8},
       3.5,
       0.0004936240230357877,
       0.0012610778090409798},
      {"ties_6v6",
       {1, 2, 2, 3, 3, 3},
       {2, 3, 4, 4, 5, 5},
       5.5,
       0.06493506493506493,
       0.047967873742731204},
      {"all_equal", {5, 5, 5}, {5, 5, 5, 5}, 6.0, 1.0, 1.0},
  };
  return cases;
}

TEST(MannWhitneyTest, MatchesScipyExact) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name);
    auto r = MannWhitneyU(c.x, c.y, MannWhitneyMethod::kExact);
    ASSERT_TRUE(r.has_value());
    EXPECT_DOUBLE_EQ(r->u_x, c.u_x);
    EXPECT_DOUBLE_EQ(r->u_x + r->u_y, static_cast<double>(c.x.size() * c.y.size()));
    EXPECT_NEAR(r->p_value, c.p_exact, 1e-12);
    EXPECT_TRUE(r->exact);
  }
}

TEST(MannWhitneyTest, MatchesScipyAsymptotic) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name);
    auto r = MannWhitneyU(c.x, c.y, MannWhitneyMethod::kAsymptotic);
    ASSERT_TRUE(r.has_value());
    EXPECT_NEAR(r->p_value, c.p_asymptotic, 1e-12);
    EXPECT_FALSE(r->exact);
  }
}

TEST(MannWhitneyTest, LargerSamplesMatchScipy) {
  // x = 0..29, y = 7.5..31.5: no ties, exact distribution over 55 values.
  std::vector<double> x, y;
  for (int i = 0; i < 30; ++i) x.push_back(i);
  for (int i = 0; i < 25; ++i) y.push_back(i + 7.5);
  auto exact = MannWhitneyU(x, y, MannWhitneyMethod::kExact);
  ASSERT_TRUE(exact.has_value());
  EXPECT_DOUBLE_EQ(exact->u_x, 253.0);
  EXPECT_NEAR(exact->p_value, 0.039302847673477415, 1e-12);
  auto normal = MannWhitneyU(x, y, MannWhitneyMethod::kAsymptotic);
  ASSERT_TRUE(normal.has_value());
  EXPECT_NEAR(normal->p_value, 0.04000233106564058, 1e-12);
}

TEST(MannWhitneyTest, AutoUsesExactOnlyWithoutTies) {
  auto no_ties = MannWhitneyU(std::vector<double>{1, 2, 3, 4}, std::vector<double>{5, 6, 7, 8});
  ASSERT_TRUE(no_ties.has_value());
  EXPECT_TRUE(no_ties->exact);
  auto ties = MannWhitneyU(std::vector<double>{1, 2, 2, 3}, std::vector<double>{2, 3, 4, 4});
  ASSERT_TRUE(ties.has_value());
  EXPECT_FALSE(ties->exact);
  std::vector<double> big(kMaxExactSampleSize + 1);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<double>(i);
  auto large = MannWhitneyU(big, std::vector<double>{100.5, 101.5});
  ASSERT_TRUE(large.has_value());
  EXPECT_FALSE(large->exact);
}

TEST(MannWhitneyTest, IsSymmetricInItsSamples) {
  std::vector<double> x = {3.1, 2.9, 3.3, 3.0, 3.2};
  std::vector<double> y = {3.4, 3.6, 3.5, 3.8, 3.05};
  auto xy = MannWhitneyU(x, y);
  auto yx = MannWhitneyU(y, x);
  ASSERT_TRUE(xy.has_value() && yx.has_value());
  EXPECT_DOUBLE_EQ(xy->p_value, yx->p_value);
  EXPECT_DOUBLE_EQ(xy->u_x, yx->u_y);
}

TEST(MannWhitneyTest, EmptySampleHasNoResult) {
  EXPECT_FALSE(MannWhitneyU(std::vector<double>{}, std::vector<double>{1.0}).has_value());
  EXPECT_FALSE(MannWhitneyU(std::vector<double>{1.0}, std::vector<double>{}).has_value());
}

TEST(MannWhitneyTest, SmallestPValue) {
  EXPECT_DOUBLE_EQ(SmallestPValue(3, 3), 0.1);         // 2 / C(6, 3)
  EXPECT_NEAR(SmallestPValue(3, 4), 2.0 / 35, 1e-15);  // still above 0.05
  EXPECT_NEAR(SmallestPValue(4, 4), 2.0 / 70, 1e-15);  // first 4-per-side below 0.05
  EXPECT_DOUBLE_EQ(SmallestPValue(1, 1), 1.0);
  EXPECT_DOUBLE_EQ(SmallestPValue(0, 5), 1.0);
}

}  // namespace
}  // namespace skiff::compare
