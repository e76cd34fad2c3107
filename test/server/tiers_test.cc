// Memory tiers through the real server, with time driven by a ManualClock:
// idle documents are packed, then evicted, and read back intact.
#include <chrono>

#include <gtest/gtest.h>

#include "test/server/server_fixture.h"
#include "test/status_matchers.h"

namespace skiff::testing {
namespace {

using doc::Value;
using std::chrono::seconds;

class TiersTest : public ServerFixture {
 protected:
  void SetUp() override {
    ServerFixture::SetUp();
    StopServer();
    options_.pack_after = seconds(10);
    options_.evict_after = seconds(60);
    auto server = server::Server::Start(options_, *store_, manual_);
    ASSERT_OK(server);
    server_ = std::move(*server);
  }

  ManualClock manual_;
};

TEST_F(TiersTest, IdleDocumentsArePackedThenEvictedAndReadBack) {
  client::Client& c = Alice();
  Value doc = {{"name", "skiff"}, {"list", {1, 2, 3}}, {"nested", {{"x", 1.5}}}};
  ASSERT_OK(c.Set("t", "a", doc));
  ASSERT_OK(c.Set("t", "b", 2));
  EXPECT_TRUE(WaitForTiers(c, [](const Value& t) { return t["hot"]["documents"] == 2; }));

  manual_.Advance(seconds(11));
  ASSERT_TRUE(WaitForTiers(c, [](const Value& t) { return t["packed"]["documents"] == 2; }));
  // Reading brings a packed document back to hot, unchanged.
  EXPECT_EQ(**c.Get("t", "a"), doc);
  ASSERT_TRUE(WaitForTiers(c, [](const Value& t) {
    return t["hot"]["documents"] == 1 && t["packed"]["documents"] == 1;
  }));

  manual_.Advance(seconds(61));
  ASSERT_TRUE(WaitForTiers(c, [](const Value& t) {
    return t["hot"]["documents"] == 0 && t["packed"]["documents"] == 0 &&
           t["evicted"]["documents"] == 2;
  }));
  // Evicted documents come back from the store.
  EXPECT_EQ(**c.Get("t", "a"), doc);
  EXPECT_EQ(*c.Add("t", "b", {}, 1), 3);
}

}  // namespace
}  // namespace skiff::testing
