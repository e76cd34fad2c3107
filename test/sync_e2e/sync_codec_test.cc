// The wire form of the sync ops: requests decode into the engine's types,
// replies encode to the shapes docs/protocol.md shows, bad fields are named.
#include <string>

#include <gtest/gtest.h>

#include "server/internal/wire/request_decoder.h"
#include "server/internal/wire/request_fields.h"
#include "server/internal/wire/sync_replies.h"

#include "test/status_matchers.h"

namespace skiff::server::internal {
namespace {

Result<Request> Decode(const std::string& text) {
  std::optional<uint64_t> id;
  return DecodeRequest(text, doc::Limits(), &id);
}

TEST(SyncCodecTest, DecodesPushWithValuesAndDeletes) {
  auto r = Decode(R"({"id":7,"op":"push","device":"d1","changes":[
      {"seq":1,"table":"t","key":"k","group":"g","value":{"a":[1,2]}},
      {"seq":2,"table":"t","key":"k2","group":"g","value":null}]})");
  ASSERT_OK(r);
  EXPECT_EQ(r->op, Op::kPush);
  EXPECT_EQ(r->push.device, "d1");
  ASSERT_EQ(r->push.changes.size(), 2u);
  EXPECT_EQ(r->push.changes[0].seq, 1u);
  EXPECT_EQ(r->push.changes[0].value, R"({"a":[1,2]})");
  EXPECT_FALSE(r->push.changes[1].value.has_value());
}

TEST(SyncCodecTest, DecodesPullBootstrapAndWait) {
  auto pull = Decode(R"({"id":1,"op":"pull","since":12})");
  ASSERT_OK(pull);
  EXPECT_EQ(pull->since, 12u);
  EXPECT_EQ(pull->limit, kDefaultSyncPage);
  auto boot = Decode(R"({"id":1,"op":"bootstrap","after":["g","t","k"],"limit":5})");
  ASSERT_OK(boot);
  EXPECT_EQ(boot->sync_after, (store::SyncRowCursor{"g", "t", "k"}));
  EXPECT_EQ(boot->limit, 5u);
  auto first = Decode(R"({"id":1,"op":"bootstrap"})");
  ASSERT_OK(first);
  EXPECT_TRUE(first->sync_after.group.empty());
  auto wait = Decode(R"({"id":1,"op":"wait","since":3})");
  ASSERT_OK(wait);
  EXPECT_EQ(wait->since, 3u);
  EXPECT_EQ(wait->timeout_ms, kDefaultWaitMs);
}

TEST(SyncCodecTest, RefusesBadFieldsNamingThem) {
  auto message = [](const std::string& text) {
    auto r = Decode(text);
    EXPECT_FALSE(r.ok()) << text;
    return r.ok() ? std::string() : r.status().message();
  };
  EXPECT_NE(message(R"({"id":1,"op":"push","device":"d","changes":{}})").find("changes"),
            std::string::npos);
  EXPECT_NE(message(R"({"id":1,"op":"push","device":"d","changes":[{"seq":1,"table":"t",
      "key":"k","group":"g"}]})")
                .find("changes[0].value"),
            std::string::npos);
  EXPECT_NE(
      message(R"({"id":1,"op":"push","device":"d","changes":[{"seq":-1}]})").find("changes[0].seq"),
      std::string::npos);
  EXPECT_NE(message(R"({"id":1,"op":"pull","since":"5"})").find("since"), std::string::npos);
  EXPECT_NE(message(R"({"id":1,"op":"pull","limit":0})").find("limit"), std::string::npos);
  EXPECT_NE(message(R"({"id":1,"op":"bootstrap","after":["g",1,"k"]})").find("after"),
            std::string::npos);
  EXPECT_NE(message(R"({"id":1,"op":"wait"})").find("since"), std::string::npos);
  EXPECT_NE(message(R"({"id":1,"op":"wait","since":1,"timeout_ms":1.5})").find("timeout_ms"),
            std::string::npos);
}

TEST(SyncCodecTest, EncodesReplies) {
  EXPECT_EQ(EncodePushReply(3, {2, 42, 1187}),
            R"({"id":3,"ok":true,"applied":2,"last_seq":42,"cursor":1187})");
  sync::PullReply pull;
  pull.changes.push_back({1186, "team", "tasks", "t1", R"({"a":1})"});
  pull.changes.push_back({1187, "team", "tasks", "t\"0", std::nullopt});
  pull.cursor = 1187;
  EXPECT_EQ(EncodePullReply(4, pull),
            R"({"id":4,"ok":true,"changes":[{"sync_id":1186,"table":"tasks","key":"t1",)"
            R"("group":"team","value":{"a":1}},{"sync_id":1187,"table":"tasks","key":"t\"0",)"
            R"("group":"team","value":null}],"cursor":1187,"more":false})");
  sync::BootstrapReply boot;
  boot.rows.push_back({"team", "tasks", "t1", "[1]", 9});
  boot.cursor = 10;
  boot.next = store::SyncRowCursor{"team", "tasks", "t1"};
  EXPECT_EQ(EncodeBootstrapReply(5, boot),
            R"({"id":5,"ok":true,"cursor":10,"next":["team","tasks","t1"],"rows":[)"
            R"({"group":"team","table":"tasks","key":"t1","value":[1],"sync_id":9}]})");
  boot.next.reset();
  boot.rows.clear();
  EXPECT_EQ(EncodeBootstrapReply(6, boot),
            R"({"id":6,"ok":true,"cursor":10,"next":null,"rows":[]})");
  EXPECT_EQ(EncodeWaitReply(7, {true, 12}), R"({"id":7,"ok":true,"changed":true,"cursor":12})");
  // Every reply is valid JSON.
  EXPECT_TRUE(doc::Value::accept(EncodePullReply(4, pull)));
}

}  // namespace
}  // namespace skiff::server::internal
