// Golden bytes of every reply kind the server sends. Clients and the
// benchmarks' byte counters see exactly these frames, so a change here is a
// protocol change.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "server/internal/wire/near_reply.h"
#include "server/internal/wire/replies.h"
#include "server/internal/wire/stats_reply.h"
#include "server/internal/wire/sync_replies.h"

namespace skiff::server::internal {
namespace {

CachedDocument Text(std::string json) {
  CachedDocument d;
  d.form = TextForm{std::move(json)};
  return d;
}

CachedDocument Tree(doc::Value tree) {
  CachedDocument d;
  d.form = TreeForm{std::move(tree)};
  return d;
}

TEST(WireEncoderTest, OkAndErrors) {
  EXPECT_EQ(EncodeOk(3), R"({"id":3,"ok":true})");
  EXPECT_EQ(EncodeOkRaw(4, "data", "[1]"), R"({"id":4,"ok":true,"data":[1]})");
  EXPECT_EQ(
      EncodeError(5, Unauthorized("op 'get' needs a logged-in connection")),
      R"({"id":5,"ok":false,"error":{"code":"unauthorized","message":"op 'get' needs a logged-in connection"}})");
  EXPECT_EQ(EncodeError(std::nullopt, TooLarge("frame \"x\"\n")),
            R"({"id":null,"ok":false,"error":{"code":"too_large","message":"frame \"x\"\n"}})");
  EXPECT_EQ(
      EncodeError(18446744073709551615u, Status(StatusCode::kOverloaded, "m")),
      R"({"id":18446744073709551615,"ok":false,"error":{"code":"overloaded","message":"m"}})");
}

TEST(WireEncoderTest, Echo) {
  Request scanned;
  scanned.id = 1;
  scanned.raw_value = R"({ "a" : [1, 2] })";
  std::string out;
  AppendEchoReply(out, scanned);
  EXPECT_EQ(out, R"({"id":1,"ok":true,"data":{ "a" : [1, 2] }})");

  Request decoded;
  decoded.id = 2;
  decoded.value = doc::Value::parse(R"({"b":"\u00e9","a":null})");
  out.clear();
  AppendEchoReply(out, decoded);
  EXPECT_EQ(out, "{\"id\":2,\"ok\":true,\"data\":{\"a\":null,\"b\":\"\xc3\xa9\"}}");
}

TEST(WireEncoderTest, DocumentReplies) {
  std::string out;
  AppendReadReply(out, 7, true, Text(R"({"name":"Ada"})"));
  EXPECT_EQ(out, R"({"id":7,"ok":true,"found":true,"value":{"name":"Ada"}})");
  out.clear();
  AppendReadReply(out, 7, true, Tree(doc::Value::parse(R"({"z":1,"a":[true]})")));
  EXPECT_EQ(out, R"({"id":7,"ok":true,"found":true,"value":{"a":[true],"z":1}})");
  out.clear();
  AppendReadReply(out, 7, false, Text("1"));  // has
  EXPECT_EQ(out, R"({"id":7,"ok":true,"found":true})");
  out.clear();
  AppendReadReply(out, 8, true, CachedDocument{});
  EXPECT_EQ(out, R"({"id":8,"ok":true,"found":false})");

  out.clear();
  AppendDeleteReply(out, 9, true);
  EXPECT_EQ(out, R"({"id":9,"ok":true,"found":true})");
  out.clear();
  AppendDeleteReply(out, 9, std::nullopt);  // a write-only user
  EXPECT_EQ(out, R"({"id":9,"ok":true})");

  const doc::Value sums[] = {doc::Value(uint64_t{18446744073709551615u}), doc::Value(int64_t{-4}),
                             doc::Value(2.5)};
  const char* texts[] = {"18446744073709551615", "-4", "2.5"};
  for (size_t i = 0; i < 3; ++i) {
    out.clear();
    AppendAddReply(out, 10, &sums[i]);
    EXPECT_EQ(out, std::string(R"({"id":10,"ok":true,"value":)") + texts[i] + "}");
  }
  out.clear();
  AppendAddReply(out, 10, nullptr);
  EXPECT_EQ(out, R"({"id":10,"ok":true})");
}

TEST(WireEncoderTest, All) {
  store::ScanPage page;
  page.items = {{"u1", R"({"city":"Paris"})"}, {"q\"\x7f\xff", "7"}};
  page.next = "u\\3";
  EXPECT_EQ(EncodeAllReply(11, page),
            "{\"id\":11,\"ok\":true,\"items\":[{\"key\":\"u1\",\"value\":{\"city\":\"Paris\"}},"
            "{\"key\":\"q\\\"\x7f\xef\xbf\xbd\",\"value\":7}],\"next\":\"u\\\\3\"}");
  EXPECT_EQ(EncodeAllReply(12, store::ScanPage{}), R"({"id":12,"ok":true,"items":[],"next":null})");
}

TEST(WireEncoderTest, Near) {
  std::vector<geo::GeoHit> hits = {{"a", 1'500'000}, {"b", 2'000'000}};
  EXPECT_EQ(EncodeNearReply(1, hits, nullptr, false),
            R"({"id":1,"ok":true,"items":[{"key":"a","dist_m":1.5},{"key":"b","dist_m":2}]})");
  EXPECT_EQ(EncodeNearReply(1, hits, nullptr, true),
            R"({"id":1,"ok":true,"keys":["a","b"],"dist_m":[1.5,2]})");
  NearValues values;
  values.text = R"({"x":1}null)";
  values.ends = {7, 11};
  EXPECT_EQ(
      EncodeNearReply(2, hits, &values, false),
      R"({"id":2,"ok":true,"items":[{"key":"a","dist_m":1.5,"value":{"x":1}},{"key":"b","dist_m":2,"value":null}]})");
  EXPECT_EQ(EncodeNearReply(2, hits, &values, true),
            R"({"id":2,"ok":true,"keys":["a","b"],"dist_m":[1.5,2],"values":[{"x":1},null]})");
  // A key that needs escaping takes the slow path, with the same bytes.
  hits[1].key = "b\"";
  EXPECT_EQ(EncodeNearReply(3, hits, nullptr, false),
            R"({"id":3,"ok":true,"items":[{"key":"a","dist_m":1.5},{"key":"b\"","dist_m":2}]})");
  EXPECT_EQ(EncodeNearReply(3, hits, nullptr, true),
            R"({"id":3,"ok":true,"keys":["a","b\""],"dist_m":[1.5,2]})");
  EXPECT_EQ(EncodeNearReply(4, {}, nullptr, false), R"({"id":4,"ok":true,"items":[]})");
}

// A cluster peer's share of a near comes back in the columns form and is
// read back exactly: distances to the micrometre, keys unescaped, documents
// as written.
TEST(WireEncoderTest, NearColumnsReadBackWhatWasWritten) {
  std::vector<geo::GeoHit> hits = {{"a", 0}, {"b\"\\", 1'111'951'247}, {"c", 7}};
  NearValues values;
  values.text = R"({"n":1.50}[1, 2]"s")";
  values.ends = {10, 16, 19};
  for (const bool with_values : {false, true}) {
    const std::string reply = EncodeNearReply(9, hits, with_values ? &values : nullptr, true);
    std::vector<geo::GeoHit> got;
    NearValues docs;
    ASSERT_TRUE(DecodeNearColumns(reply, &got, with_values ? &docs : nullptr)) << reply;
    ASSERT_EQ(got.size(), hits.size());
    for (size_t i = 0; i < hits.size(); ++i) {
      EXPECT_EQ(got[i].key, hits[i].key);
      EXPECT_EQ(got[i].dist_um, hits[i].dist_um);
      if (with_values) {
        EXPECT_EQ(docs.at(i), values.at(i));
      }
    }
  }
  std::vector<geo::GeoHit> got;
  NearValues docs;
  EXPECT_TRUE(DecodeNearColumns(EncodeNearReply(1, {}, nullptr, true), &got, nullptr));
  EXPECT_TRUE(got.empty());
  // Not a share's answer: nothing appended.
  for (const char* bad : {
           R"({"id":1,"ok":false,"error":{"code":"moved","message":"m"}})",
           R"({"id":1,"ok":true,"keys":["a"],"dist_m":[]})",
           R"({"id":1,"ok":true,"keys":["a"],"dist_m":[1.1234567]})",
           R"({"id":1,"ok":true,"keys":["a"],"dist_m":[-1]})",
           R"({"id":1,"ok":true,"keys":[1],"dist_m":[1]})",
           R"({"id":1,"ok":true,"items":[]})",
           R"({"id":1,"ok":true,"keys":["a"],"dist_m":[1]} trailing)",
           "not json",
       }) {
    EXPECT_FALSE(DecodeNearColumns(bad, &got, nullptr)) << bad;
    EXPECT_TRUE(got.empty()) << bad;
  }
  // Values asked for and missing.
  EXPECT_FALSE(DecodeNearColumns(R"({"id":1,"ok":true,"keys":["a"],"dist_m":[1]})", &got, &docs));
}

TEST(WireEncoderTest, Stats) {
  StatsFigures f;
  f.tiers.hot = {1, 2};
  f.tiers.packed = {3, 4};
  f.tiers.evictions = 5;
  f.commits.transactions = 6;
  f.commits.writes = 7;
  f.network.connections = 8;
  f.network.accepted = 9;
  f.network.max_buffered_bytes = 10;
  f.sessions = 11;
  f.durability = "commit";
  f.store = "sqlite";
  f.store_statements = 12;
  f.sync_cursor = 13;
  f.sync.pushes = 14;
  f.sync.catch_ups = 15;
  f.pages_read_ahead = 16;
  f.read_ahead_bytes = 17;
  f.geo.push_back({"places", "lat,lon", 4, 1, 10, 2.5});
  EXPECT_EQ(EncodeStatsReply(20, f),
            R"({"id":20,"ok":true,"connections":8,"durability":"commit",)"
            R"("geo":{"places":{"bytes":10,"bytes_per_point":2.5,"points":4,"reads":"lat,lon",)"
            R"("rebuild_ms":2.5,"unindexed":1}},)"
            R"("network":{"accepted":9,"batch_system_calls":0,"batched_sends":0,)"
            R"("buffered_input_bytes":0,"buffered_output_bytes":0,)"
            R"("descriptor_exhaustion":0,"frame_timeouts":0,"handshake_failures":0,)"
            R"("health_checks":0,"idle_closes":0,"max_buffered_bytes":10,"max_connections":0,)"
            R"("paused":0,"protocol_errors":0,"refused":0,"send_timeouts":0,"tls_failures":0},)"
            R"("sessions":11,"store":"sqlite","store_statements":12,)"
            R"("sync":{"catch_ups":15,"cursor":13,"pages_from_read_ahead":0,"pages_read_ahead":16,)"
            R"("pushes":14,"read_ahead_bytes":17,"read_ahead_refused":0,"waits_expired":0,)"
            R"("waits_held":0,"waits_woken":0},)"
            R"("tiers":{"evicted":{"documents":5},"hot":{"bytes":2,"documents":1},)"
            R"("packed":{"bytes":4,"documents":3}},"transactions":6,"writes":7})");
  f.cluster = ClusterStats{2, 64};
  const std::string with_cluster = EncodeStatsReply(20, f);
  EXPECT_NE(with_cluster.find(R"("cluster":{"instance":2,"partitions_served":64},"connections":8)"),
            std::string::npos)
      << with_cluster;
}

TEST(WireEncoderTest, SyncReplies) {
  EXPECT_EQ(EncodePushReply(3, {2, 42, 1187}),
            R"({"id":3,"ok":true,"applied":2,"last_seq":42,"cursor":1187})");
  sync::PullReply pull;
  pull.changes.push_back({1186, "g", "t", "k\"", std::string(R"({"a":1})")});
  pull.changes.push_back({1187, "g", "t", "k2", std::nullopt});
  pull.cursor = 1187;
  pull.more = true;
  EXPECT_EQ(
      EncodePullReply(4, pull),
      R"({"id":4,"ok":true,"changes":[{"sync_id":1186,"table":"t","key":"k\"","group":"g","value":{"a":1}},)"
      R"({"sync_id":1187,"table":"t","key":"k2","group":"g","value":null}],"cursor":1187,"more":true})");
  sync::BootstrapReply boot;
  boot.cursor = 9;
  boot.next = store::SyncRowCursor{"g", "t", "k"};
  boot.rows.push_back({"g", "t", "k", R"({"v":1})", 8});
  EXPECT_EQ(
      EncodeBootstrapReply(5, boot),
      R"({"id":5,"ok":true,"cursor":9,"next":["g","t","k"],"rows":[{"group":"g","table":"t","key":"k","value":{"v":1},"sync_id":8}]})");
  EXPECT_EQ(EncodeWaitReply(7, {false, 12}), R"({"id":7,"ok":true,"changed":false,"cursor":12})");
}

}  // namespace
}  // namespace skiff::server::internal
