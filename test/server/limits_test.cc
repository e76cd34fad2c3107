// The per-user and per-address limits on a ManualClock: the token bucket,
// the users' tables and the failed-login guard, without sleeping.
#include <chrono>
#include <string>

#include <gtest/gtest.h>

#include "base/clock.h"
#include "server/internal/login_guard.h"
#include "server/internal/token_bucket.h"
#include "server/internal/user_limits.h"

namespace skiff::server::internal {
namespace {

using std::chrono::milliseconds;

constexpr int64_t kMs = 1'000'000;

TEST(TokenBucketTest, GivesTheBurstThenOneTokenPerInterval) {
  const TokenBucket bucket(/*rate=*/10, /*burst=*/3);  // a token every 100 ms
  int64_t state = 0;
  const int64_t t0 = 5'000 * kMs;
  EXPECT_EQ(bucket.Take(t0, &state), 0);
  EXPECT_EQ(bucket.Take(t0, &state), 0);
  EXPECT_EQ(bucket.Take(t0, &state), 0);
  // Empty: the next token is 100 ms away, and a refusal changes nothing.
  EXPECT_EQ(bucket.Take(t0, &state), 100 * kMs);
  EXPECT_EQ(bucket.Take(t0 + 40 * kMs, &state), 60 * kMs);
  EXPECT_EQ(bucket.Take(t0 + 100 * kMs, &state), 0);
  EXPECT_EQ(bucket.Take(t0 + 100 * kMs, &state), 100 * kMs);
  // After a long pause it holds the burst again, never more.
  EXPECT_TRUE(TokenBucket::Full(t0 + 10'000 * kMs, state));
  const int64_t later = t0 + 10'000 * kMs;
  for (int i = 0; i < 3; ++i) EXPECT_EQ(bucket.Take(later, &state), 0) << i;
  EXPECT_GT(bucket.Take(later, &state), 0);
}

TEST(UserLimitsTest, RateIsPerUserAcrossCallsAndRecovers) {
  ManualClock clock;
  UserLimits limits(clock, /*rate=*/2, /*burst=*/2, /*max_sessions=*/0);
  EXPECT_TRUE(limits.limits_requests());
  EXPECT_FALSE(limits.limits_sessions());
  EXPECT_EQ(limits.TakeRequest("ann"), 0u);
  EXPECT_EQ(limits.TakeRequest("ann"), 0u);
  EXPECT_EQ(limits.TakeRequest("ann"), 500u);  // ms until the next token
  EXPECT_EQ(limits.TakeRequest("bob"), 0u);    // a user of its own
  clock.Advance(milliseconds(499));
  EXPECT_EQ(limits.TakeRequest("ann"), 1u);
  clock.Advance(milliseconds(1));
  EXPECT_EQ(limits.TakeRequest("ann"), 0u);
}

TEST(UserLimitsTest, UnsetBurstIsOneSecondsWorth) {
  ManualClock clock;
  UserLimits limits(clock, /*rate=*/5, /*burst=*/0, /*max_sessions=*/0);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(limits.TakeRequest("u"), 0u) << i;
  EXPECT_EQ(limits.TakeRequest("u"), 200u);
}

TEST(UserLimitsTest, OffWhenRateIsZero) {
  ManualClock clock;
  UserLimits limits(clock, 0, 0, 0);
  EXPECT_FALSE(limits.limits_requests());
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(limits.TakeRequest("u"), 0u);
  EXPECT_EQ(limits.tracked_buckets(), 0u);
  EXPECT_TRUE(limits.BeginSession("u"));
  EXPECT_FALSE(limits.SessionsFull("u"));
}

TEST(UserLimitsTest, BucketTableStaysBounded) {
  ManualClock clock;
  // 32 shards of 2 entries each.
  UserLimits limits(clock, /*rate=*/1, /*burst=*/1, /*max_sessions=*/0, /*max_users=*/64);
  for (int i = 0; i < 10'000; ++i) {
    (void)limits.TakeRequest("user" + std::to_string(i));
    ASSERT_LE(limits.tracked_buckets(), 64u) << i;
  }
  // Buckets full again are dropped first: after a second, the next users
  // find room without forgetting anyone busy.
  clock.Advance(std::chrono::seconds(2));
  EXPECT_EQ(limits.TakeRequest("fresh"), 0u);
  EXPECT_LE(limits.tracked_buckets(), 64u);
}

TEST(UserLimitsTest, SessionsAreCountedPerUserAndGivenBack) {
  ManualClock clock;
  UserLimits limits(clock, 0, 0, /*max_sessions=*/2);
  EXPECT_TRUE(limits.BeginSession("ann"));
  EXPECT_TRUE(limits.BeginSession("ann"));
  EXPECT_TRUE(limits.SessionsFull("ann"));
  EXPECT_FALSE(limits.BeginSession("ann"));
  EXPECT_TRUE(limits.BeginSession("bob"));
  limits.EndSession("ann");
  EXPECT_FALSE(limits.SessionsFull("ann"));
  EXPECT_TRUE(limits.BeginSession("ann"));
  limits.EndSession("ann");
  limits.EndSession("ann");
  limits.EndSession("bob");
  limits.EndSession("nobody");  // never counted: no effect
  EXPECT_EQ(limits.tracked_sessions(), 0u);
}

TEST(LoginGuardTest, BlocksAfterMaxFailuresWithinTheWindowThenDoubles) {
  ManualClock clock;
  LoginGuard guard(clock, /*max_failures=*/3, milliseconds(1000));
  const std::string a = "10.0.0.1";
  guard.Failed(a);
  guard.Failed(a);
  EXPECT_EQ(guard.Blocked(a), 0u);
  guard.Failed(a);
  EXPECT_EQ(guard.Blocked(a), 1000u);  // the first block lasts a window
  EXPECT_EQ(guard.Blocked("10.0.0.2"), 0u);
  clock.Advance(milliseconds(400));
  EXPECT_EQ(guard.Blocked(a), 600u);
  clock.Advance(milliseconds(600));
  EXPECT_EQ(guard.Blocked(a), 0u);
  // Failing again right after: the next block lasts twice as long.
  for (int i = 0; i < 3; ++i) guard.Failed(a);
  EXPECT_EQ(guard.Blocked(a), 2000u);
  clock.Advance(milliseconds(2000));
  for (int i = 0; i < 3; ++i) guard.Failed(a);
  EXPECT_EQ(guard.Blocked(a), 4000u);
}

TEST(LoginGuardTest, FailuresOutsideOneWindowDoNotAddUp) {
  ManualClock clock;
  LoginGuard guard(clock, 3, milliseconds(1000));
  guard.Failed("a");
  guard.Failed("a");
  clock.Advance(milliseconds(1001));
  guard.Failed("a");
  guard.Failed("a");
  EXPECT_EQ(guard.Blocked("a"), 0u);
  guard.Failed("a");
  EXPECT_EQ(guard.Blocked("a"), 1000u);
}

TEST(LoginGuardTest, SuccessForgetsTheAddressAndTheBackOff) {
  ManualClock clock;
  LoginGuard guard(clock, 2, milliseconds(1000));
  guard.Failed("a");
  guard.Failed("a");
  clock.Advance(milliseconds(1000));
  guard.Succeeded("a");
  EXPECT_EQ(guard.tracked(), 0u);
  guard.Failed("a");
  guard.Failed("a");
  EXPECT_EQ(guard.Blocked("a"), 1000u);  // not doubled
}

TEST(LoginGuardTest, TableIsBoundedAndExpires) {
  ManualClock clock;
  LoginGuard guard(clock, 2, milliseconds(1000), /*max_addresses=*/100);
  for (int i = 0; i < 5000; ++i) {
    guard.Failed("10.1." + std::to_string(i / 256) + "." + std::to_string(i % 256));
    ASSERT_LE(guard.tracked(), 100u) << i;
  }
  // Old entries expire and make room before any live one is forgotten.
  guard.Failed("victim");
  guard.Failed("victim");
  EXPECT_EQ(guard.Blocked("victim"), 1000u);
  clock.Advance(std::chrono::seconds(10));
  guard.Failed("late");
  EXPECT_LE(guard.tracked(), 2u);
}

TEST(LoginGuardTest, OffWhenMaxIsZero) {
  ManualClock clock;
  LoginGuard guard(clock, 0, milliseconds(1000));
  for (int i = 0; i < 100; ++i) guard.Failed("a");
  EXPECT_EQ(guard.Blocked("a"), 0u);
  EXPECT_EQ(guard.tracked(), 0u);
}

}  // namespace
}  // namespace skiff::server::internal
