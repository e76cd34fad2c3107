// The sync ops on the wire: a retried push applies once, a wait opened at
// the current cursor holds until a visible write and ignores invisible ones,
// held waits of a closed connection are cancelled, bad input is refused.
#include <chrono>
#include <future>
#include <string>

#include <gtest/gtest.h>

#include "test/status_matchers.h"
#include "test/sync_e2e/sync_fixture.h"

namespace skiff::testing {
namespace {

using std::chrono::milliseconds;

doc::Value PushOf(const std::string& device, uint64_t seq, const std::string& group,
                  const std::string& key, const doc::Value& value) {
  return {{"op", "push"},
          {"device", device},
          {"changes",
           {{{"seq", seq}, {"table", "t"}, {"key", key}, {"group", group}, {"value", value}}}}};
}

uint64_t CursorOf(client::Client& c) {
  auto reply = c.CallSync({{"op", "pull"}, {"since", 0}, {"limit", 10000}});
  EXPECT_OK(reply);
  return reply.ok() ? (*reply)["cursor"].get<uint64_t>() : 0;
}

class WireSyncTest : public SyncFixture {};

TEST_F(WireSyncTest, ARetriedPushAppliesOnce) {
  AddUser("ann", {"team"});
  client::Client& ann = ClientFor("ann");
  doc::Value push = PushOf("phone", 1, "team", "k", {{"v", 1}});
  auto first = ann.CallSync(push);
  ASSERT_OK(first);
  EXPECT_EQ((*first)["applied"], 1);
  EXPECT_EQ((*first)["last_seq"], 1);
  // The device did not see the reply and sends the same push again.
  auto again = ann.CallSync(push);
  ASSERT_OK(again);
  EXPECT_EQ((*again)["applied"], 0);
  EXPECT_EQ((*again)["last_seq"], 1);
  EXPECT_EQ((*again)["cursor"], (*first)["cursor"]);

  auto pulled = ann.CallSync({{"op", "pull"}, {"since", 0}});
  ASSERT_OK(pulled);
  ASSERT_EQ((*pulled)["changes"].size(), 1u);
  EXPECT_EQ((*pulled)["changes"][0]["value"], doc::Value({{"v", 1}}));
  EXPECT_EQ((*pulled)["more"], false);

  // A delete is a change with a null value; bootstrap no longer has the row.
  ASSERT_OK(ann.CallSync(PushOf("phone", 2, "team", "k", nullptr)));
  auto rows = ann.CallSync({{"op", "bootstrap"}, {"after", nullptr}});
  ASSERT_OK(rows);
  EXPECT_EQ((*rows)["rows"].size(), 0u);
  EXPECT_TRUE((*rows)["next"].is_null());
  EXPECT_EQ((*rows)["cursor"], 2);
}

TEST_F(WireSyncTest, AWaitHoldsUntilAVisibleWriteAndIgnoresInvisibleOnes) {
  AddUser("ann", {"team"});
  AddUser("bob", {"other"});
  client::Client& ann = ClientFor("ann");
  client::Client& bob = ClientFor("bob");
  ASSERT_OK(bob.CallSync(PushOf("bob-1", 1, "other", "warmup", 0)));

  const uint64_t since = CursorOf(ann);  // read now, not at setup
  std::future<client::Reply> wait =
      ann.Call({{"op", "wait"}, {"since", since}, {"timeout_ms", 20000}});
  EXPECT_EQ(wait.wait_for(milliseconds(200)), std::future_status::timeout) << "answered at once";
  // A write ann may not see leaves the wait held.
  ASSERT_OK(bob.CallSync(PushOf("bob-1", 2, "other", "k", 1)));
  EXPECT_EQ(wait.wait_for(milliseconds(300)), std::future_status::timeout)
      << "woken by another group's write";
  // One she may see answers it.
  auto pushed = ann.CallSync(PushOf("ann-1", 1, "team", "k", 1));
  ASSERT_OK(pushed);
  ASSERT_EQ(wait.wait_for(milliseconds(5000)), std::future_status::ready);
  client::Reply reply = wait.get();
  ASSERT_OK(reply);
  EXPECT_EQ((*reply)["changed"], true);
  EXPECT_EQ((*reply)["cursor"], (*pushed)["cursor"]);

  // A wait past which something already changed answers at once; a short
  // one with nothing new times out with changed: false.
  auto at_once = ann.CallSync({{"op", "wait"}, {"since", since}, {"timeout_ms", 10000}});
  ASSERT_OK(at_once);
  EXPECT_EQ((*at_once)["changed"], true);
  auto timed_out = ann.CallSync(
      {{"op", "wait"}, {"since", (*pushed)["cursor"].get<uint64_t>()}, {"timeout_ms", 50}});
  ASSERT_OK(timed_out);
  EXPECT_EQ((*timed_out)["changed"], false);
}

TEST_F(WireSyncTest, WaitsOfAClosedConnectionAreCancelled) {
  AddUser("ann", {"team"});
  {
    client::Client& ann = ClientFor("ann");
    const uint64_t since = CursorOf(ann);
    for (int i = 0; i < 5; ++i) {
      ann.Call({{"op", "wait"}, {"since", since}, {"timeout_ms", 30000}}, [](client::Reply) {});
    }
    ASSERT_OK(ann.Ping());
    clients_.clear();  // closes the connection with five waits held
  }
  client::Client& again = ClientFor("ann");
  // The server stays healthy and a write wakes nobody who is gone.
  ASSERT_OK(again.CallSync(PushOf("ann-1", 1, "team", "k", 1)));
  ASSERT_OK(again.Ping());
}

TEST_F(WireSyncTest, BadSyncRequestsAreRefusedWithClearErrors) {
  AddUser("ann", {"team"});
  client::Client& ann = ClientFor("ann");
  auto code = [&](const doc::Value& request) {
    auto reply = ann.CallSync(request);
    return reply.ok() ? StatusCode::kOk : reply.status().code();
  };
  EXPECT_EQ(code(PushOf("d", 1, "elsewhere", "k", 1)), StatusCode::kForbidden);
  EXPECT_EQ(code({{"op", "push"}, {"device", "d"}}), StatusCode::kBadRequest);
  EXPECT_EQ(code({{"op", "push"}, {"device", "d"}, {"changes", {{{"seq", 1}}}}}),
            StatusCode::kBadRequest);
  EXPECT_EQ(code({{"op", "pull"}, {"since", -1}}), StatusCode::kBadRequest);
  EXPECT_EQ(code({{"op", "pull"}, {"since", 99}}), StatusCode::kBadRequest);  // ahead
  EXPECT_EQ(code({{"op", "bootstrap"}, {"after", {"a", "b"}}}), StatusCode::kBadRequest);
  EXPECT_EQ(code({{"op", "wait"}}), StatusCode::kBadRequest);
  EXPECT_EQ(code({{"op", "wait"}, {"since", 0}, {"timeout_ms", 3600000}}), StatusCode::kBadRequest);
  // Before login, sync ops are refused like any other.
  client::ClientOptions anonymous = ClientOptionsFor("", "");
  client::Client& anon = Connect(anonymous);
  EXPECT_EQ(anon.CallSync({{"op", "pull"}, {"since", 0}}).status().code(),
            StatusCode::kUnauthorized);
}

}  // namespace
}  // namespace skiff::testing
