#include "sync/wait_registry.h"

#include <chrono>

#include <gtest/gtest.h>

namespace skiff::sync {
namespace {

using namespace std::chrono_literals;

WaitRegistry::Groups G(std::vector<std::string> groups) {
  return std::make_shared<const std::vector<std::string>>(std::move(groups));
}

class WaitRegistryTest : public testing::Test {
 protected:
  // Adds a wait that records how it was answered into answers_[tag].
  WaitRegistry::WaitId Hold(std::vector<std::string> groups, Clock::Duration timeout, int tag) {
    return registry_.Add(G(std::move(groups)), clock_.Now() + timeout,
                         [this, tag](bool changed) { answers_[tag] = changed ? 'C' : 'T'; });
  }
  static void RunAll(std::vector<WaitRegistry::Callback> callbacks) {
    for (auto& c : callbacks) c(true);
  }

  ManualClock clock_;
  WaitRegistry registry_;
  std::map<int, char> answers_;
};

TEST_F(WaitRegistryTest, WakesOnlyWaitsOfTheTouchedGroups) {
  Hold({"a"}, 10s, 1);
  Hold({"b"}, 10s, 2);
  Hold({"a", "b"}, 10s, 3);
  auto woken = registry_.TakeWoken({"a"});
  EXPECT_EQ(woken.size(), 2u);
  for (auto& c : woken) c(true);
  EXPECT_EQ(answers_, (std::map<int, char>{{1, 'C'}, {3, 'C'}}));
  EXPECT_EQ(registry_.size(), 1u);
  // A wait on two groups is answered once, even when both are touched.
  Hold({"x", "y"}, 10s, 4);
  EXPECT_EQ(registry_.TakeWoken({"x", "y", "b"}).size(), 2u);
  EXPECT_EQ(registry_.size(), 0u);
}

TEST_F(WaitRegistryTest, ExpiresByDeadlineInOrder) {
  Hold({"a"}, 1s, 1);
  Hold({"a"}, 3s, 2);
  EXPECT_EQ(registry_.NextDeadline(), clock_.Now() + 1s);
  EXPECT_TRUE(registry_.TakeExpired(clock_.Now()).empty());
  clock_.Advance(1s);
  auto expired = registry_.TakeExpired(clock_.Now());
  ASSERT_EQ(expired.size(), 1u);
  expired[0](false);
  EXPECT_EQ(answers_, (std::map<int, char>{{1, 'T'}}));
  EXPECT_EQ(registry_.NextDeadline(), clock_.Now() + 2s);
  // The expired wait is gone from its group too.
  EXPECT_EQ(registry_.TakeWoken({"a"}).size(), 1u);
  EXPECT_EQ(registry_.NextDeadline(), std::nullopt);
}

TEST_F(WaitRegistryTest, CancelledWaitIsNeverAnswered) {
  auto id = Hold({"a"}, 1s, 1);
  EXPECT_TRUE(registry_.Cancel(id));
  EXPECT_FALSE(registry_.Cancel(id));
  clock_.Advance(5s);
  EXPECT_TRUE(registry_.TakeExpired(clock_.Now()).empty());
  EXPECT_TRUE(registry_.TakeWoken({"a"}).empty());
  EXPECT_TRUE(answers_.empty());
}

TEST_F(WaitRegistryTest, ManyExpiriesLeaveNoResidue) {
  for (int round = 0; round < 100; ++round) {
    for (int i = 0; i < 100; ++i) Hold({"g"}, 1s, i);
    clock_.Advance(1s);
    EXPECT_EQ(registry_.TakeExpired(clock_.Now()).size(), 100u);
  }
  EXPECT_EQ(registry_.size(), 0u);
  EXPECT_TRUE(registry_.TakeWoken({"g"}).empty());
}

TEST_F(WaitRegistryTest, TakeAllEmptiesEverything) {
  Hold({"a"}, 1s, 1);
  Hold({"b"}, 2s, 2);
  EXPECT_EQ(registry_.TakeAll().size(), 2u);
  EXPECT_EQ(registry_.size(), 0u);
  EXPECT_EQ(registry_.NextDeadline(), std::nullopt);
}

}  // namespace
}  // namespace skiff::sync
