// The sync ops on the wire: a retried push applies once, a wait opened at
// the current cursor holds until a visible write and ignores invisible ones,
// held waits of a closed connection are cancelled, bad input is refused.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "test/status_matchers.h"
#include "test/sync_e2e/sync_fixture.h"

namespace skiff::testing {
namespace {

using std::chrono::milliseconds;

// Pushes one change of table "t" by `device`: `value`, or a delete for null.
Result<client::PushReply> PushOne(client::Client& c, const std::string& device, uint64_t seq,
                                  const std::string& group, const std::string& key,
                                  const doc::Value& value) {
  const client::SyncChange change{
      seq, {group, "t", key}, value.is_null() ? std::nullopt : std::optional(doc::Dump(value))};
  return c.Push({device, {&change, 1}});
}

// A row's JSON text as a document (null for a delete).
doc::Value ValueOf(const std::optional<std::string>& text) {
  return text ? doc::Value::parse(*text) : doc::Value();
}

// The wait's reply, to be waited for.
std::future<Result<client::WaitReply>> WaitFor(client::Client& c, uint64_t since,
                                               milliseconds timeout) {
  auto done = std::make_shared<std::promise<Result<client::WaitReply>>>();
  std::future<Result<client::WaitReply>> reply = done->get_future();
  c.Wait({since, timeout}, [done](Result<client::WaitReply> r) { done->set_value(std::move(r)); });
  return reply;
}

uint64_t CursorOf(client::Client& c) {
  auto reply = c.Pull({0, 10000});
  EXPECT_OK(reply);
  return reply.ok() ? reply->cursor : 0;
}

class WireSyncTest : public SyncFixture {};

TEST_F(WireSyncTest, ARetriedPushAppliesOnce) {
  AddUser("ann", {"team"});
  client::Client& ann = ClientFor("ann");
  auto first = PushOne(ann, "phone", 1, "team", "k", {{"v", 1}});
  ASSERT_OK(first);
  EXPECT_EQ(first->applied, 1u);
  EXPECT_EQ(first->last_seq, 1u);
  // The device did not see the reply and sends the same push again.
  auto again = PushOne(ann, "phone", 1, "team", "k", {{"v", 1}});
  ASSERT_OK(again);
  EXPECT_EQ(again->applied, 0u);
  EXPECT_EQ(again->last_seq, 1u);
  EXPECT_EQ(again->cursor, first->cursor);

  auto pulled = ann.Pull({0});
  ASSERT_OK(pulled);
  ASSERT_EQ(pulled->changes.size(), 1u);
  EXPECT_EQ(ValueOf(pulled->changes[0].value), doc::Value({{"v", 1}}));
  EXPECT_EQ(pulled->more, false);

  // A delete is a change with a null value; bootstrap no longer has the row.
  ASSERT_OK(PushOne(ann, "phone", 2, "team", "k", nullptr));
  auto rows = ann.Bootstrap({});
  ASSERT_OK(rows);
  EXPECT_EQ(rows->rows.size(), 0u);
  EXPECT_FALSE(rows->next.has_value());
  EXPECT_EQ(rows->cursor, 2u);
}

TEST_F(WireSyncTest, AWaitHoldsUntilAVisibleWriteAndIgnoresInvisibleOnes) {
  AddUser("ann", {"team"});
  AddUser("bob", {"other"});
  client::Client& ann = ClientFor("ann");
  client::Client& bob = ClientFor("bob");
  ASSERT_OK(PushOne(bob, "bob-1", 1, "other", "warmup", 0));

  const uint64_t since = CursorOf(ann);  // read now, not at setup
  std::future<Result<client::WaitReply>> wait = WaitFor(ann, since, milliseconds(20000));
  EXPECT_EQ(wait.wait_for(milliseconds(200)), std::future_status::timeout) << "answered at once";
  // A write ann may not see leaves the wait held.
  ASSERT_OK(PushOne(bob, "bob-1", 2, "other", "k", 1));
  EXPECT_EQ(wait.wait_for(milliseconds(300)), std::future_status::timeout)
      << "woken by another group's write";
  // One she may see answers it.
  auto pushed = PushOne(ann, "ann-1", 1, "team", "k", 1);
  ASSERT_OK(pushed);
  ASSERT_EQ(wait.wait_for(milliseconds(5000)), std::future_status::ready);
  Result<client::WaitReply> reply = wait.get();
  ASSERT_OK(reply);
  EXPECT_EQ(reply->changed, true);
  EXPECT_EQ(reply->cursor, pushed->cursor);

  // A wait past which something already changed answers at once; a short
  // one with nothing new times out with changed: false.
  auto at_once = ann.Wait({since, milliseconds(10000)});
  ASSERT_OK(at_once);
  EXPECT_EQ(at_once->changed, true);
  auto timed_out = ann.Wait({pushed->cursor, milliseconds(50)});
  ASSERT_OK(timed_out);
  EXPECT_EQ(timed_out->changed, false);
}

TEST_F(WireSyncTest, WaitsOfAClosedConnectionAreCancelled) {
  AddUser("ann", {"team"});
  {
    client::Client& ann = ClientFor("ann");
    const uint64_t since = CursorOf(ann);
    for (int i = 0; i < 5; ++i) {
      ann.Wait({since, milliseconds(30000)}, [](Result<client::WaitReply>) {});
    }
    ASSERT_OK(ann.Ping());
    clients_.clear();  // closes the connection with five waits held
  }
  client::Client& again = ClientFor("ann");
  // The server stays healthy and a write wakes nobody who is gone.
  ASSERT_OK(PushOne(again, "ann-1", 1, "team", "k", 1));
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
  std::optional<client::RowName> after;
  for (int page = 0; page < 100; ++page) {
    auto reply = c.Bootstrap({after, static_cast<size_t>(limit)});
    EXPECT_OK(reply);
    if (!reply.ok()) break;
    for (const client::RowWrite& row : reply->rows) {
      out.rows.emplace_back(row.name.key, ValueOf(row.value));
    }
    if (page == 0) {
      out.first_cursor = reply->cursor;
      between();
    }
    after = reply->next;
    if (!after) break;
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
    ASSERT_OK(PushOne(ann, "phone", ++seq, "team", key, i));
  }
  // Page 2 is read ahead once page 1 is sent; k15, on page 2, changes after.
  Bootstrapped got = BootstrapInPages(
      ann, 10, [&] { ASSERT_OK(PushOne(other, "tablet", 1, "team", "k15", "changed")); });
  ASSERT_EQ(got.rows.size(), 25u);
  std::map<std::string, doc::Value> held;
  std::vector<std::string> order;
  for (const auto& [key, value] : got.rows) {
    order.push_back(key);
    held[key] = value;
  }
  EXPECT_TRUE(std::is_sorted(order.begin(), order.end()));
  EXPECT_EQ(held["k15"], 15) << "page 2 was not the one read ahead";
  auto pulled = ann.Pull({got.first_cursor});
  ASSERT_OK(pulled);
  for (const client::RowWrite& change : pulled->changes) {
    held[change.name.key] = ValueOf(change.value);
  }
  EXPECT_EQ(held["k15"], "changed");
  EXPECT_EQ(held["k14"], 14);
  doc::Value sync = SyncStats(ann);
  EXPECT_EQ(sync["pages_read_ahead"], 2) << sync.dump();       // pages 2 and 3
  EXPECT_EQ(sync["pages_from_read_ahead"], 2) << sync.dump();  // both asked for
  EXPECT_EQ(sync["read_ahead_bytes"], 0) << sync.dump();       // nothing kept after the last

  // The same connection pushes between its pages this time.
  got = BootstrapInPages(ann, 10,
                         [&] { ASSERT_OK(PushOne(ann, "phone", ++seq, "team", "k16", "mine")); });
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
    ASSERT_OK(
        PushOne(ann, "phone", static_cast<uint64_t>(i + 1), "team", "k" + std::to_string(i), i));
  }
  auto first = ann.Bootstrap({std::nullopt, 2});
  ASSERT_OK(first);
  EXPECT_EQ(SyncStats(ann)["pages_read_ahead"], 1);
  ASSERT_OK(ann.CallSync({{"op", "logout"}}));
  ASSERT_OK(ann.CallSync({{"op", "login"}, {"user", "bob"}, {"secret", secrets_["bob"]}}));
  ASSERT_TRUE(first->next.has_value());
  auto bobs = ann.Bootstrap({first->next, 2});
  ASSERT_OK(bobs);
  EXPECT_EQ(bobs->rows.size(), 0u) << bobs->rows.front().name.key;
  doc::Value sync = SyncStats(ann);
  EXPECT_EQ(sync["pages_from_read_ahead"], 0) << sync.dump();
  EXPECT_EQ(sync["read_ahead_bytes"], 0) << sync.dump();

  // Back as ann on a connection of her own: asking for the first page
  // again, instead of the second read ahead, stops reading ahead there.
  client::Client& again = ClientFor("ann");
  ASSERT_OK(again.Bootstrap({std::nullopt, 2}));
  ASSERT_OK(again.Bootstrap({std::nullopt, 2}));
  ASSERT_OK(again.Bootstrap({std::nullopt, 2}));
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
  // Well-formed requests go through the typed calls; the malformed ones
  // below can only be written by hand.
  EXPECT_EQ(PushOne(ann, "d", 1, "elsewhere", "k", 1).status().code(), StatusCode::kForbidden);
  EXPECT_EQ(code({{"op", "push"}, {"device", "d"}}), StatusCode::kBadRequest);
  EXPECT_EQ(code({{"op", "push"}, {"device", "d"}, {"changes", {{{"seq", 1}}}}}),
            StatusCode::kBadRequest);
  EXPECT_EQ(code({{"op", "pull"}, {"since", -1}}), StatusCode::kBadRequest);
  EXPECT_EQ(ann.Pull({99}).status().code(), StatusCode::kBadRequest);  // ahead
  EXPECT_EQ(code({{"op", "bootstrap"}, {"after", {"a", "b"}}}), StatusCode::kBadRequest);
  EXPECT_EQ(code({{"op", "wait"}}), StatusCode::kBadRequest);
  EXPECT_EQ(ann.Wait({0, milliseconds(3600000)}).status().code(), StatusCode::kBadRequest);
  // Before login, sync ops are refused like any other.
  client::ClientOptions anonymous = ClientOptionsFor("", "");
  client::Client& anon = Connect(anonymous);
  EXPECT_EQ(anon.Pull({0}).status().code(), StatusCode::kUnauthorized);
}

}  // namespace
}  // namespace skiff::testing
