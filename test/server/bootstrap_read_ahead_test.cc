// BootstrapReadAhead on its own: a kept page answers only its own cursor,
// limit and session groups; a miss turns reading ahead off; room is taken
// from the budget before a read, so a full budget costs no read, and every
// byte comes back.
#include "server/internal/bootstrap_read_ahead.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace skiff::server::internal {
namespace {

using Groups = std::shared_ptr<const std::vector<std::string>>;

sync::BootstrapReply PageOf(int rows, size_t value_bytes = 200) {
  sync::BootstrapReply reply;
  for (int i = 0; i < rows; ++i) {
    reply.rows.push_back({"team", "t", "k" + std::to_string(i), std::string(value_bytes, 'v'), 1});
  }
  reply.cursor = 7;
  return reply;
}

const store::SyncRowCursor kAfter{"team", "t", "k9"};

// Room for a page like `sent`, which must be there.
BudgetRoom RoomFor(const std::shared_ptr<ReadAheadBudget>& budget,
                   const sync::BootstrapReply& sent) {
  std::optional<BudgetRoom> room = BootstrapReadAhead::Reserve(budget, sent);
  EXPECT_TRUE(room);
  return std::move(*room);
}

TEST(BootstrapReadAheadTest, AKeptPageAnswersItsOwnRequestOnce) {
  auto budget = std::make_shared<ReadAheadBudget>(1 << 20);
  const Groups groups = std::make_shared<const std::vector<std::string>>(1, "team");
  BootstrapReadAhead ahead;
  EXPECT_FALSE(ahead.Take(kAfter, 10, groups));  // nothing kept
  EXPECT_TRUE(ahead.enabled());
  ASSERT_TRUE(ahead.Keep(RoomFor(budget, PageOf(10)), kAfter, 10, groups, PageOf(10)));
  EXPECT_EQ(budget->used(), BootstrapReadAhead::BytesOf(PageOf(10)));
  auto page = ahead.Take(kAfter, 10, groups);
  ASSERT_TRUE(page);
  EXPECT_EQ(page->rows.size(), 10u);
  EXPECT_EQ(page->cursor, 7u);
  EXPECT_EQ(budget->used(), 0u);
  EXPECT_FALSE(ahead.holding());
  EXPECT_FALSE(ahead.Take(kAfter, 10, groups));  // answered once
  EXPECT_TRUE(ahead.enabled());
}

TEST(BootstrapReadAheadTest, AnotherCursorLimitOrSessionMissesAndStopsReadingAhead) {
  auto budget = std::make_shared<ReadAheadBudget>(1 << 20);
  const Groups groups = std::make_shared<const std::vector<std::string>>(1, "team");
  // The same names in another login's list: another session.
  const Groups same_names = std::make_shared<const std::vector<std::string>>(1, "team");
  struct Miss {
    store::SyncRowCursor after;
    size_t limit;
    Groups groups;
  };
  for (const Miss& miss : {Miss{{"team", "t", "k8"}, 10, groups}, Miss{kAfter, 11, groups},
                           Miss{kAfter, 10, same_names}}) {
    BootstrapReadAhead ahead;
    ASSERT_TRUE(ahead.Keep(RoomFor(budget, PageOf(3)), kAfter, 10, groups, PageOf(3)));
    EXPECT_FALSE(ahead.Take(miss.after, miss.limit, miss.groups));
    EXPECT_FALSE(ahead.enabled());
    EXPECT_FALSE(ahead.holding());
    EXPECT_EQ(budget->used(), 0u);
    // A new session reads ahead again.
    ahead.Reset();
    EXPECT_TRUE(ahead.enabled());
  }
}

TEST(BootstrapReadAheadTest, RoomIsTakenBeforeTheReadAndGivenBack) {
  const sync::BootstrapReply sent = PageOf(100);
  const size_t one_page = BootstrapReadAhead::BytesOf(sent);
  const Groups groups = std::make_shared<const std::vector<std::string>>(1, "team");
  // A page over a sixteenth of the budget is never read ahead.
  auto small = std::make_shared<ReadAheadBudget>(16 * one_page - 1);
  EXPECT_FALSE(BootstrapReadAhead::Reserve(small, sent));
  EXPECT_EQ(small->used(), 0u);
  {
    auto tight = std::make_shared<ReadAheadBudget>(16 * one_page);
    std::vector<BootstrapReadAhead> connections(17);
    for (size_t i = 0; i < 16; ++i) {
      ASSERT_TRUE(connections[i].Keep(RoomFor(tight, sent), kAfter, 100, groups, PageOf(100)));
    }
    // Full: no room, so the caller does not read.
    EXPECT_FALSE(BootstrapReadAhead::Reserve(tight, sent));
    EXPECT_EQ(tight->used(), 16 * one_page);
    // A page read larger than its room, with no room left to grow: dropped.
    ASSERT_TRUE(connections[0].Take(kAfter, 100, groups));
    EXPECT_FALSE(connections[16].Keep(RoomFor(tight, sent), kAfter, 100, groups, PageOf(100, 400)));
    EXPECT_FALSE(connections[16].holding());
    EXPECT_EQ(tight->used(), 15 * one_page);
    // One smaller than its room gives the rest back.
    EXPECT_TRUE(connections[16].Keep(RoomFor(tight, sent), kAfter, 100, groups, PageOf(10)));
    EXPECT_EQ(tight->used(), 15 * one_page + BootstrapReadAhead::BytesOf(PageOf(10)));
    connections.clear();  // the connections end
    EXPECT_EQ(tight->used(), 0u);
  }
}

TEST(BootstrapReadAheadTest, TheBudgetNeverOverflows) {
  ReadAheadBudget budget(1000);
  EXPECT_FALSE(budget.TryTake(SIZE_MAX));
  EXPECT_TRUE(budget.TryTake(1000));
  EXPECT_FALSE(budget.TryTake(1));
  budget.Give(1000);
  EXPECT_EQ(budget.used(), 0u);
}

}  // namespace
}  // namespace skiff::server::internal
