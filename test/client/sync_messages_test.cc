// The sync ops' requests as the client writes them and their replies as it
// reads them: the exact text of each request, the same size as the tree a
// request used to be printed from (so traffic counters keep their values),
// and clear errors for replies of the wrong form.
#include "client/sync_messages.h"

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "doc/document.h"

#include "test/status_matchers.h"

namespace skiff::client {
namespace {

using std::chrono::milliseconds;

TEST(SyncMessagesTest, RequestsAreWrittenAsTheProtocolSays) {
  const std::vector<SyncChange> changes = {{1, {"team", "t", "k1"}, R"({"v":1})"},
                                           {2, {"team", "t", "k2"}, std::nullopt}};
  EXPECT_EQ(EncodeRequest(PushRequest{"phone", changes}),
            R"({"op":"push","device":"phone","changes":[)"
            R"({"seq":1,"group":"team","table":"t","key":"k1","value":{"v":1}},)"
            R"({"seq":2,"group":"team","table":"t","key":"k2","value":null}]})");
  EXPECT_EQ(EncodeRequest(PullRequest{12, 1000}), R"({"op":"pull","since":12,"limit":1000})");
  EXPECT_EQ(EncodeRequest(PullRequest{0}), R"({"op":"pull","since":0})");
  EXPECT_EQ(EncodeRequest(BootstrapRequest{}), R"({"op":"bootstrap"})");
  EXPECT_EQ(EncodeRequest(BootstrapRequest{RowName{"g", "t", "k"}, 5}),
            R"({"op":"bootstrap","after":["g","t","k"],"limit":5})");
  EXPECT_EQ(EncodeRequest(WaitRequest{3, milliseconds(20000)}),
            R"({"op":"wait","since":3,"timeout_ms":20000})");
  EXPECT_EQ(EncodeRequest(WaitRequest{3}), R"({"op":"wait","since":3})");
  // With an id, for callers that speak the wire themselves.
  EXPECT_EQ(EncodeRequest(PullRequest{7, 1000}, 2),
            R"({"id":2,"op":"pull","since":7,"limit":1000})");
}

TEST(SyncMessagesTest, NamesThatNeedEscapesAreWrittenAsTheTreeWouldBe) {
  const std::string odd = "a \"quoted\" \\ name\n\xC3\xA9";
  const std::vector<SyncChange> changes = {{1, {odd, odd, odd}, "1"}};
  const std::string text = EncodeRequest(PushRequest{odd, changes});
  const doc::Value parsed = doc::Value::parse(text);
  EXPECT_EQ(parsed["device"], odd);
  EXPECT_EQ(parsed["changes"][0]["key"], odd);
  // The same bytes as the tree form's text, members in another order.
  const doc::Value tree = {
      {"op", "push"},
      {"device", odd},
      {"changes", {{{"seq", 1}, {"table", odd}, {"key", odd}, {"group", odd}, {"value", 1}}}}};
  EXPECT_EQ(text.size(), doc::Dump(tree).size());
}

TEST(SyncMessagesTest, RequestsAreAsLongAsTheTreesTheyReplace) {
  const std::string value = doc::Dump(doc::Value{{"title", "x"}, {"n", 1.5}, {"tags", {"a"}}});
  const std::vector<SyncChange> changes = {{41, {"team", "tasks", "r1"}, value}};
  const doc::Value push = {{"op", "push"},
                           {"device", "d"},
                           {"changes",
                            {{{"seq", 41},
                              {"table", "tasks"},
                              {"key", "r1"},
                              {"group", "team"},
                              {"value", doc::Value::parse(value)}}}}};
  EXPECT_EQ(EncodeRequest(PushRequest{"d", changes}).size(), doc::Dump(push).size());
  const doc::Value pull = {{"op", "pull"}, {"since", 1180}, {"limit", 1000}};
  EXPECT_EQ(EncodeRequest(PullRequest{1180, 1000}).size(), doc::Dump(pull).size());
  const doc::Value boot = {{"op", "bootstrap"}, {"limit", 1000}, {"after", {"g", "t", "k"}}};
  EXPECT_EQ(EncodeRequest(BootstrapRequest{RowName{"g", "t", "k"}, 1000}).size(),
            doc::Dump(boot).size());
  const doc::Value wait = {{"op", "wait"}, {"since", 1187}, {"timeout_ms", 20000}};
  EXPECT_EQ(EncodeRequest(WaitRequest{1187, milliseconds(20000)}).size(), doc::Dump(wait).size());
}

TEST(SyncMessagesTest, RepliesAreRead) {
  auto push =
      DecodePushReply(doc::Value::parse(R"({"ok":true,"applied":2,"last_seq":9,"cursor":40})"));
  ASSERT_OK(push);
  EXPECT_EQ(push->applied, 2u);
  EXPECT_EQ(push->last_seq, 9u);
  EXPECT_EQ(push->cursor, 40u);

  auto pull = DecodePullReply(doc::Value::parse(
      R"({"ok":true,"changes":[{"sync_id":5,"table":"t","key":"k","group":"g","value":{"b":1,"a":2}},)"
      R"({"sync_id":6,"table":"t","key":"gone","group":"g","value":null}],"cursor":6,"more":true})"));
  ASSERT_OK(pull);
  ASSERT_EQ(pull->changes.size(), 2u);
  EXPECT_EQ(pull->changes[0].name, (RowName{"g", "t", "k"}));
  EXPECT_EQ(pull->changes[0].value, R"({"a":2,"b":1})");  // the tree's compact text
  EXPECT_FALSE(pull->changes[1].value.has_value());
  EXPECT_EQ(pull->cursor, 6u);
  EXPECT_TRUE(pull->more);

  auto wait = DecodeWaitReply(doc::Value::parse(R"({"ok":true,"changed":true,"cursor":7})"));
  ASSERT_OK(wait);
  EXPECT_TRUE(wait->changed);
  EXPECT_EQ(wait->cursor, 7u);

  auto page =
      DecodeBootstrapReply(R"({"id":1,"ok":true,"cursor":3,"next":["g","t","k2"],"rows":[)"
                           R"({"group":"g","table":"t","key":"k1","value":{"v":1},"sync_id":3}]})");
  ASSERT_OK(page);
  ASSERT_EQ(page->rows.size(), 1u);
  EXPECT_EQ(page->rows[0].value, R"({"v":1})");
  EXPECT_EQ(page->next, (RowName{"g", "t", "k2"}));
}

TEST(SyncMessagesTest, RepliesOfTheWrongFormAreInternalErrors) {
  EXPECT_STATUS(DecodePushReply(doc::Value::parse(R"({"ok":true,"applied":1})")), kInternal);
  EXPECT_STATUS(DecodePushReply(doc::Value::parse(R"({"applied":1,"last_seq":-1,"cursor":1})")),
                kInternal);
  EXPECT_STATUS(DecodePullReply(doc::Value::parse(R"({"changes":{},"cursor":1})")), kInternal);
  EXPECT_STATUS(DecodePullReply(doc::Value::parse(R"({"changes":[{"key":"k"}],"cursor":1})")),
                kInternal);
  EXPECT_STATUS(DecodeWaitReply(doc::Value::parse(R"({"changed":"yes","cursor":1})")), kInternal);
  EXPECT_STATUS(DecodeWaitReply(doc::Value::parse("[]")), kInternal);
  EXPECT_STATUS(DecodeBootstrapReply(R"({"rows":[]})"), kInternal);
}

}  // namespace
}  // namespace skiff::client
