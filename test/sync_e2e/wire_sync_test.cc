// The sync ops on the wire: a retried push applies once, a wait opened at
// the current cursor holds until a visible write and ignores invisible ones,
// held waits of a closed connection are cancelled, bad input is refused.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <future>
#include <map>
#include <string>
#include <utility>
#include <vector>

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

doc::Value SyncStats(client::Client& c) {
  auto stats = c.CallSync({{"op", "stats"}});
  EXPECT_OK(stats);
  return stats.ok() ? (*stats)["sync"] : doc::Value();
}

// Pages of a bootstrap, `limit` rows each, read in order on `c`; `between`
// runs once the first page is in. Every row's value by key, in the order
// the rows came, and the first page's cursor.
struct Bootstrapped {
  std::vector<std::pair<std::string, doc::Value>> rows;
  uint64_t first_cursor = 0;
};
Bootstrapped BootstrapInPages(client::Client& c, int limit, const std::function<void()>& between) {
  Bootstrapped out;
  doc::Value after = nullptr;
  for (int page = 0; page < 100; ++page) {
    auto reply = c.CallSync({{"op", "bootstrap"}, {"after", after}, {"limit", limit}});
    EXPECT_OK(reply);
    if (!reply.ok()) break;
    for (const doc::Value& row : (*reply)["rows"]) {
      out.rows.emplace_back(row["key"].get<std::string>(), row["value"]);
    }
    if (page == 0) {
      out.first_cursor = (*reply)["cursor"].get<uint64_t>();
      between();
    }
    after = (*reply)["next"];
    if (after.is_null()) break;
  }
  return out;
}

// A client paging through a bootstrap in order gets every page after the
// first from the page the server read ahead, and what it ends with (pages,
// then a pull from the first page's cursor) is the server's state, though a
// row changed after its page was read ahead. A push of its own drops the
// page read ahead, so its next page has the push's rows.
TEST_F(WireSyncTest, BootstrapPagesAreReadAheadAndStayExact) {
  AddUser("ann", {"team"});
  client::Client& ann = ClientFor("ann");
  client::Client& other = ClientFor("ann");  // another of ann's connections
  uint64_t seq = 0;
  for (int i = 0; i < 25; ++i) {
    char key[8];
    snprintf(key, sizeof key, "k%02d", i);
    ASSERT_OK(ann.CallSync(PushOf("phone", ++seq, "team", key, i)));
  }
  // Page 2 is read ahead once page 1 is sent; k15, on page 2, changes after.
  Bootstrapped got = BootstrapInPages(
      ann, 10, [&] { ASSERT_OK(other.CallSync(PushOf("tablet", 1, "team", "k15", "changed"))); });
  ASSERT_EQ(got.rows.size(), 25u);
  std::map<std::string, doc::Value> held;
  std::vector<std::string> order;
  for (const auto& [key, value] : got.rows) {
    order.push_back(key);
    held[key] = value;
  }
  EXPECT_TRUE(std::is_sorted(order.begin(), order.end()));
  EXPECT_EQ(held["k15"], 15) << "page 2 was not the one read ahead";
  auto pulled = ann.CallSync({{"op", "pull"}, {"since", got.first_cursor}});
  ASSERT_OK(pulled);
  for (const doc::Value& change : (*pulled)["changes"]) {
    held[change["key"].get<std::string>()] = change["value"];
  }
  EXPECT_EQ(held["k15"], "changed");
  EXPECT_EQ(held["k14"], 14);
  doc::Value sync = SyncStats(ann);
  EXPECT_EQ(sync["pages_read_ahead"], 2) << sync.dump();       // pages 2 and 3
  EXPECT_EQ(sync["pages_from_read_ahead"], 2) << sync.dump();  // both asked for
  EXPECT_EQ(sync["read_ahead_bytes"], 0) << sync.dump();       // nothing kept after the last

  // The same connection pushes between its pages this time.
  got = BootstrapInPages(
      ann, 10, [&] { ASSERT_OK(ann.CallSync(PushOf("phone", ++seq, "team", "k16", "mine"))); });
  ASSERT_EQ(got.rows.size(), 25u);
  EXPECT_EQ(got.rows[16].second, "mine");
  sync = SyncStats(ann);
  // Page 2 read ahead and dropped by the push, then read again; page 3
  // read ahead and used.
  EXPECT_EQ(sync["pages_read_ahead"], 4) << sync.dump();
  EXPECT_EQ(sync["pages_from_read_ahead"], 3) << sync.dump();
}

// A page read ahead for one session never answers the next session on the
// same connection, even for the same cursor (its logout drops it; the
// page also carries its session's group list); and a client that asks for
// another page than the one read ahead turns reading ahead off for its
// connection.
TEST_F(WireSyncTest, AReadAheadPageAnswersOnlyTheSessionAndPageItWasReadFor) {
  AddUser("ann", {"team"});
  AddUser("bob", {"other"});
  client::Client& ann = ClientFor("ann");
  for (int i = 0; i < 5; ++i) {
    ASSERT_OK(ann.CallSync(PushOf("phone", i + 1, "team", "k" + std::to_string(i), i)));
  }
  auto first = ann.CallSync({{"op", "bootstrap"}, {"after", nullptr}, {"limit", 2}});
  ASSERT_OK(first);
  EXPECT_EQ(SyncStats(ann)["pages_read_ahead"], 1);
  ASSERT_OK(ann.CallSync({{"op", "logout"}}));
  ASSERT_OK(ann.CallSync({{"op", "login"}, {"user", "bob"}, {"secret", secrets_["bob"]}}));
  auto bobs = ann.CallSync({{"op", "bootstrap"}, {"after", (*first)["next"]}, {"limit", 2}});
  ASSERT_OK(bobs);
  EXPECT_EQ((*bobs)["rows"].size(), 0u) << bobs->dump();
  doc::Value sync = SyncStats(ann);
  EXPECT_EQ(sync["pages_from_read_ahead"], 0) << sync.dump();
  EXPECT_EQ(sync["read_ahead_bytes"], 0) << sync.dump();

  // Back as ann on a connection of her own: asking for the first page
  // again, instead of the second read ahead, stops reading ahead there.
  client::Client& again = ClientFor("ann");
  ASSERT_OK(again.CallSync({{"op", "bootstrap"}, {"after", nullptr}, {"limit", 2}}));
  ASSERT_OK(again.CallSync({{"op", "bootstrap"}, {"after", nullptr}, {"limit", 2}}));
  ASSERT_OK(again.CallSync({{"op", "bootstrap"}, {"after", nullptr}, {"limit", 2}}));
  sync = SyncStats(again);
  EXPECT_EQ(sync["pages_read_ahead"], 2) << sync.dump();  // one per connection
  EXPECT_EQ(sync["pages_from_read_ahead"], 0) << sync.dump();
  EXPECT_EQ(sync["read_ahead_bytes"], 0) << sync.dump();
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
