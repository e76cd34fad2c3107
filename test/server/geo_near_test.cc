// The near op through a real server over a real WebSocket and a real SQLite
// file: answers equal the brute-force oracle's (support/geo) on random points
// over the whole sphere, at the poles and across +-180 degrees, and the index
// follows every write, every memory tier, a restart and a failed commit.
#include <chrono>
#include <cmath>
#include <future>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/faulty_store.h"
#include "support/geo/geo_oracle.h"

#include "test/server/geo_fixture.h"
#include "test/server/ws_peer.h"
#include "test/status_matchers.h"

namespace skiff::testing {
namespace {

using bench::geo::BruteForceNearest;
using bench::geo::CheckAnswer;
using bench::geo::GeoPoint;
using bench::geo::GeoSearch;
using doc::Value;

std::string KeyOf(uint64_t id) { return "p" + std::to_string(id); }

// Points spread over the sphere, crowded at both poles and on both sides
// of the antimeridian, where a planar index would go wrong.
std::vector<GeoPoint> RandomPoints(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(0, 1);
  std::vector<GeoPoint> points;
  for (uint64_t id = 1; id <= n; ++id) {
    GeoPoint p{id, 0, 0};
    switch (id % 4) {
      case 0:  // uniform on the sphere
        p.lat = std::asin(2 * unit(rng) - 1) * 180 / M_PI;
        p.lon = unit(rng) * 360 - 180;
        break;
      case 1:  // within about 55 km of a pole
        p.lat = (id % 8 == 1 ? 1 : -1) * (90 - unit(rng) * 0.5);
        p.lon = unit(rng) * 360 - 180;
        break;
      default:  // a strip across +-180
        p.lat = unit(rng) * 10 - 5;
        p.lon = unit(rng) < 0.5 ? 180 - unit(rng) : -180 + unit(rng);
        break;
    }
    points.push_back(p);
  }
  points[0].lat = 90;  // exactly on the poles and the antimeridian too
  points[1].lat = -90;
  points[2].lon = 180;
  points[3].lon = -180;
  return points;
}

class GeoNearTest : public GeoFixture {
 protected:
  // Sets every point as a document {"lat","lon","n"}, pipelined.
  static void SetAll(client::Client& c, const std::vector<GeoPoint>& points) {
    std::vector<std::future<client::Reply>> replies;
    for (const GeoPoint& p : points) {
      replies.push_back(c.Call({{"op", "set"},
                                {"table", "places"},
                                {"key", KeyOf(p.id)},
                                {"value", {{"lat", p.lat}, {"lon", p.lon}, {"n", p.id}}}}));
    }
    for (auto& r : replies) ASSERT_OK(r.get());
  }

  // near's answer for `q`, with or without its box, held to the oracle's.
  static void ExpectOracle(client::Client& c, const std::vector<GeoPoint>& points,
                           const GeoSearch& q, bool use_box) {
    Value request = {{"table", "places"}, {"lat", q.lat}, {"lon", q.lon}, {"limit", q.limit}};
    if (use_box) request["box_m"] = {q.box_m, q.box_m};
    auto items = Near(c, request);
    ASSERT_OK(items);
    std::vector<bench::geo::GeoHit> got;
    for (const NearItem& item : *items) {
      got.push_back({std::stoull(item.key.substr(1)), item.dist_m});
    }
    const std::vector<bench::geo::GeoHit> truth = BruteForceNearest(points, q, use_box);
    const auto check = CheckAnswer(got, truth, points, q, use_box);
    EXPECT_EQ(check.unexplained, 0u) << check.problem << " at " << q.lat << "," << q.lon;
    ASSERT_EQ(got.size(), truth.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].id, truth[i].id) << "item " << i << " at " << q.lat << "," << q.lon;
    }
  }

  // A spread of query centres: the poles, the antimeridian, random.
  static std::vector<GeoSearch> Queries(uint64_t seed) {
    std::vector<GeoSearch> qs = {{90, 0, 25, 200'000},     {-90, 45, 25, 200'000},
                                 {89.9, 180, 40, 150'000}, {0, 180, 30, 400'000},
                                 {0, -180, 30, 400'000},   {2, 179.99, 60, 300'000},
                                 {-3, -179.9, 10, 50'000}, {45, 10, 1, 1'000'000}};
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> unit(0, 1);
    for (int i = 0; i < 24; ++i) {
      qs.push_back({std::asin(2 * unit(rng) - 1) * 180 / M_PI, unit(rng) * 360 - 180,
                    size_t(1 + rng() % 200), 100'000 + unit(rng) * 3'000'000});
    }
    return qs;
  }
};

TEST_F(GeoNearTest, AnswersEqualTheOracleOverTheSphere) {
  Declare("places");
  client::Client& c = Alice(1, 256);
  std::vector<GeoPoint> points = RandomPoints(4000, 7);
  SetAll(c, points);
  for (const GeoSearch& q : Queries(11)) {
    ExpectOracle(c, points, q, /*use_box=*/false);
    ExpectOracle(c, points, q, /*use_box=*/true);
  }
  // Moved by merge, then asked again: the oracle on the new places.
  for (size_t i = 0; i < points.size(); i += 7) {
    points[i].lat = -points[i].lat;
    points[i].lon = points[i].lon > 0 ? points[i].lon - 180 : points[i].lon + 180;
    ASSERT_OK(
        c.Merge("places", KeyOf(points[i].id), {{"lat", points[i].lat}, {"lon", points[i].lon}}));
  }
  for (const GeoSearch& q : Queries(12)) ExpectOracle(c, points, q, /*use_box=*/true);
  // A restart rebuilds the index from the store: the same answers.
  Restart();
  client::Client& again = Alice();
  for (const GeoSearch& q : Queries(13)) ExpectOracle(again, points, q, /*use_box=*/false);
  EXPECT_EQ(GeoStats(again, "places")["points"], points.size());
}

TEST_F(GeoNearTest, RadiusKeepsOnlyPointsWithin) {
  Declare("places");
  client::Client& c = Alice(1, 256);
  const std::vector<GeoPoint> points = RandomPoints(1000, 3);
  SetAll(c, points);
  GeoSearch q{89.8, -170, 10'000, 0};
  std::vector<bench::geo::GeoHit> all = BruteForceNearest(points, q, false);
  const double radius = 60'000;
  std::erase_if(all, [&](const bench::geo::GeoHit& h) { return h.dist_m > radius; });
  ASSERT_GT(all.size(), 10u);
  auto items = Near(c, {{"table", "places"},
                        {"lat", q.lat},
                        {"lon", q.lon},
                        {"limit", 10000},
                        {"radius_m", radius}});
  ASSERT_OK(items);
  ASSERT_EQ(items->size(), all.size());
  for (size_t i = 0; i < all.size(); ++i) EXPECT_EQ((*items)[i].key, KeyOf(all[i].id));
}

TEST_F(GeoNearTest, IndexFollowsSetMergeAddAndDelete) {
  Declare("places");
  client::Client& c = Alice();
  ASSERT_OK(c.Set("places", "a", Point(10, 20)));
  ASSERT_OK(c.Set("places", "b", Point(10.001, 20)));
  ASSERT_OK(c.Set("places", "c", {{"name", "no position"}}));
  EXPECT_EQ(NearKeys(c, "places", 10, 20), (std::vector<std::string>{"a", "b"}));
  Value stats = GeoStats(c, "places");
  EXPECT_EQ(stats["points"], 2);
  EXPECT_EQ(stats["unindexed"], 1);
  EXPECT_GT(stats["bytes_per_point"].get<double>(), 0);

  // A merge moves a; an add on another field leaves it; an add on its
  // latitude moves it again.
  ASSERT_OK(c.Merge("places", "a", {{"lat", 10.002}}));
  EXPECT_EQ(NearKeys(c, "places", 10, 20), (std::vector<std::string>{"b", "a"}));
  ASSERT_OK(c.Add("places", "a", {"visits"}, 1));
  EXPECT_EQ(NearKeys(c, "places", 10, 20), (std::vector<std::string>{"b", "a"}));
  ASSERT_OK(c.Add("places", "a", {"lat"}, -0.0025));
  EXPECT_EQ(NearKeys(c, "places", 10, 20), (std::vector<std::string>{"a", "b"}));
  auto items = Near(c, {{"table", "places"}, {"lat", 10}, {"lon", 20}, {"limit", 1}});
  ASSERT_OK(items);
  ASSERT_EQ(items->size(), 1u);
  EXPECT_NEAR((*items)[0].dist_m, 0.0005 * M_PI / 180 * 6'371'008.8, 1e-6);

  // c gains a position, b loses its own (out of range, then not numbers).
  ASSERT_OK(c.Merge("places", "c", Point(-10, -20)));
  ASSERT_OK(c.Set("places", "b", Point(91, 20)));
  EXPECT_EQ(NearKeys(c, "places", 10, 20), (std::vector<std::string>{"a", "c"}));
  ASSERT_OK(c.Merge("places", "b", {{"lat", "10"}}));
  stats = GeoStats(c, "places");
  EXPECT_EQ(stats["points"], 2);
  EXPECT_EQ(stats["unindexed"], 1);

  // Deleted documents leave the index and the unindexed count.
  ASSERT_OK(c.Delete("places", "a"));
  ASSERT_OK(c.Delete("places", "b"));
  EXPECT_EQ(NearKeys(c, "places", 10, 20), (std::vector<std::string>{"c"}));
  stats = GeoStats(c, "places");
  EXPECT_EQ(stats["points"], 1);
  EXPECT_EQ(stats["unindexed"], 0);
  // Other tables are not indexed.
  ASSERT_OK(c.Set("other", "x", Point(10, 20)));
  EXPECT_EQ(NearKeys(c, "places", 10, 20), (std::vector<std::string>{"c"}));
}

// The distances as text, in both forms: whole metres, then up to six
// decimals without trailing zeros.
TEST_F(GeoNearTest, DistancesAreWrittenToTheMicrometre) {
  Declare("places");
  client::Client& c = Alice();
  ASSERT_OK(c.Set("places", "here", Point(0, 0)));
  ASSERT_OK(c.Set("places", "east", Point(0, 0.0005)));   // 55.5975401167... m
  ASSERT_OK(c.Set("places", "north", Point(0.0009, 0)));  // 100.0755722101... m
  ASSERT_OK(c.Set("places", "far", Point(0, 0.09)));      // 10,007.5572210... m
  WsPeer peer;
  ASSERT_TRUE(peer.Open(server_->port()));
  const Value login = {{"id", 1}, {"op", "login"}, {"user", "alice"}, {"secret", alice_secret_}};
  ASSERT_TRUE(peer.SendText(login.dump()));
  ASSERT_TRUE(peer.Next());
  const std::string query = R"("op":"near","table":"places","lat":0,"lon":0,"limit":4)";
  ASSERT_TRUE(peer.SendText(R"({"id":2,)" + query + "}"));
  auto items = peer.Next();
  ASSERT_TRUE(items);
  EXPECT_EQ(items->payload, R"({"id":2,"ok":true,"items":[{"key":"here","dist_m":0},)"
                            R"({"key":"east","dist_m":55.59754},)"
                            R"({"key":"north","dist_m":100.075572},)"
                            R"({"key":"far","dist_m":10007.557221}]})");
  ASSERT_TRUE(peer.SendText(R"({"id":3,"columns":true,)" + query + "}"));
  auto columns = peer.Next();
  ASSERT_TRUE(columns);
  EXPECT_EQ(columns->payload, R"({"id":3,"ok":true,"keys":["here","east","north","far"],)"
                              R"("dist_m":[0,55.59754,100.075572,10007.557221]})");
}

// Plain keys are copied into the reply as they are; every other key is
// escaped. Both come back as they were set, in distance order.

TEST_F(GeoNearTest, KeysThatNeedEscapingComeBackIntact) {
  Declare("places");
  client::Client& c = Alice();
  const std::vector<std::string> keys = {"plain-1",   "quo\"te", "back\\slash", "tab\there",
                                         "caf\u00e9", "del\x7f", "\x01",        "~"};
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_OK(c.Set("places", keys[i], Point(10 + 0.001 * double(i), 20)));
  }
  EXPECT_EQ(NearKeys(c, "places", 10, 20), keys);
}

TEST_F(GeoNearTest, GeoJsonPointPath) {
  server::GeoSpec spec;
  spec.table = "shops";
  spec.point = {"where", "geo"};
  Declare(spec);
  client::Client& c = Alice();
  auto shop = [](double lon, double lat) {
    return Value{{"where", {{"geo", {{"type", "Point"}, {"coordinates", {lon, lat}}}}}}};
  };
  ASSERT_OK(c.Set("shops", "east", shop(-179.999, 0)));
  ASSERT_OK(c.Set("shops", "west", shop(179.998, 0)));
  ASSERT_OK(c.Set("shops", "far", shop(0, 0)));
  ASSERT_OK(c.Set("shops", "line", {{"where", {{"geo", {{"type", "LineString"}}}}}}));
  // Across the antimeridian from 180: east is 111 m away, west 222 m.
  EXPECT_EQ(NearKeys(c, "shops", 0, 180), (std::vector<std::string>{"east", "west", "far"}));
  EXPECT_EQ(GeoStats(c, "shops")["unindexed"], 1);
}

TEST_F(GeoNearTest, RestartBuildsTheIndexOfStoredDocuments) {
  client::Client& c = Alice(1, 64);
  ASSERT_OK(c.Set("places", "a", Point(1, 1)));
  ASSERT_OK(c.Set("places", "b", Point(1, 1.01)));
  ASSERT_OK(c.Set("places", "bad", {{"lat", "north"}, {"lon", 1}}));
  // No index yet: refused.
  EXPECT_EQ(Near(c, {{"table", "places"}, {"lat", 1}, {"lon", 1}}).status().code(),
            StatusCode::kBadRequest);
  Declare("places");
  client::Client& again = Alice();
  EXPECT_EQ(NearKeys(again, "places", 1, 1), (std::vector<std::string>{"a", "b"}));
  Value stats = GeoStats(again, "places");
  EXPECT_EQ(stats["points"], 2);
  EXPECT_EQ(stats["unindexed"], 1);
  EXPECT_EQ(stats["reads"], "lat lat, lon lon");
  // Deleted from the catalog: gone at the next start.
  ASSERT_OK(server::DeleteGeoIndex(*store_, "places"));
  Restart();
  EXPECT_EQ(Near(Alice(), {{"table", "places"}, {"lat", 1}, {"lon", 1}}).status().code(),
            StatusCode::kBadRequest);
}

TEST_F(GeoNearTest, MemoryDurabilityRestartKeepsTheIndex) {
  options_.durability = server::Durability::kMemory;
  Declare("places");
  client::Client& c = Alice();
  ASSERT_OK(c.Set("places", "a", Point(-45, 100)));
  ASSERT_OK(c.Merge("places", "a", {{"lon", 100.5}}));
  Restart();  // Stop writes what was acknowledged
  auto items = Near(Alice(), {{"table", "places"}, {"lat", -45}, {"lon", 100.5}});
  ASSERT_OK(items);
  ASSERT_EQ(items->size(), 1u);
  EXPECT_EQ((*items)[0].key, "a");
  EXPECT_LT((*items)[0].dist_m, 1e-6);
}

// The index's point after a write that failed for good is the store's.
class GeoFailedCommitTest : public GeoFixture {
 protected:
  void SetUp() override {
    GeoFixture::SetUp();
    faulty_ = std::make_unique<support::FaultyStore>(*store_);
    wrapper_ = faulty_.get();
  }
  void TearDown() override {
    GeoFixture::TearDown();
    faulty_.reset();
  }
  std::unique_ptr<support::FaultyStore> faulty_;
};

TEST_F(GeoFailedCommitTest, RefusedWriteLeavesTheStoredPosition) {
  Declare("places");
  client::Client& c = Alice();
  ASSERT_OK(c.Set("places", "a", Point(5, 5)));
  faulty_->Refuse(Unavailable("injected: the disk is full"));
  EXPECT_EQ(c.Set("places", "a", Point(-5, -5)).code(), StatusCode::kUnavailable);
  EXPECT_EQ(NearKeys(c, "places", 5, 5), (std::vector<std::string>{"a"}));
  auto items = Near(c, {{"table", "places"}, {"lat", 5}, {"lon", 5}, {"values", true}});
  ASSERT_OK(items);
  ASSERT_EQ(items->size(), 1u);
  EXPECT_LT((*items)[0].dist_m, 1e-6);
  EXPECT_EQ((*items)[0].value, Point(5, 5));

  // A new key whose first write failed is not in the index; nor is a
  // delete that failed taken as done.
  faulty_->Refuse(Unavailable("injected: the disk is full"));
  EXPECT_EQ(c.Set("places", "new", Point(5, 5)).code(), StatusCode::kUnavailable);
  faulty_->Refuse(Unavailable("injected: the disk is full"));
  EXPECT_EQ(c.Delete("places", "a").status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(NearKeys(c, "places", 5, 5), (std::vector<std::string>{"a"}));
  EXPECT_EQ(GeoStats(c, "places")["points"], 1);
  EXPECT_EQ(faulty_->faults_met(), 3);
}

TEST_F(GeoFailedCommitTest, LostAnswerKeepsWhatTheStoreApplied) {
  Declare("places");
  client::Client& c = Alice();
  ASSERT_OK(c.Set("places", "a", Point(5, 5)));
  // The commit happened but its answer was lost: the store has the move.
  faulty_->ApplyThenLose(Status(StatusCode::kOutcomeUnknown, "injected: the answer was lost"));
  EXPECT_FALSE(c.Set("places", "a", Point(-5, -5)).ok());
  EXPECT_EQ(NearKeys(c, "places", -5, -5), (std::vector<std::string>{"a"}));
  auto items = Near(c, {{"table", "places"}, {"lat", -5}, {"lon", -5}});
  ASSERT_OK(items);
  EXPECT_LT((*items)[0].dist_m, 1e-6);
}

// Packed and evicted documents stay in the index, and values:true reads an
// evicted one back through the store.
class GeoTiersTest : public GeoFixture {
 protected:
  void SetUp() override {
    GeoFixture::SetUp();
    options_.pack_after = std::chrono::seconds(10);
    options_.evict_after = std::chrono::seconds(60);
  }
  void StartManual() {
    clients_.clear();
    StopServer();
    auto server = server::Server::Start(options_, *store_, manual_);
    ASSERT_OK(server);
    server_ = std::move(*server);
  }
  ManualClock manual_;
};

TEST_F(GeoTiersTest, PackedAndEvictedDocumentsStayFindable) {
  ASSERT_OK(server::AddGeoIndex(*store_, {"places", {"lat"}, {"lon"}, {}}));
  StartManual();
  client::Client& c = Alice();
  ASSERT_OK(c.Set("places", "a", {{"lat", 0}, {"lon", 0}, {"name", "first"}}));
  ASSERT_OK(c.Set("places", "b", {{"lat", 0}, {"lon", 0.001}, {"name", "second"}}));
  manual_.Advance(std::chrono::seconds(11));
  ASSERT_TRUE(WaitForTiers(c, [](const Value& t) { return t["packed"]["documents"] == 2; }));
  EXPECT_EQ(NearKeys(c, "places", 0, 0), (std::vector<std::string>{"a", "b"}));
  manual_.Advance(std::chrono::seconds(61));
  ASSERT_TRUE(WaitForTiers(c, [](const Value& t) {
    return t["packed"]["documents"] == 0 && t["hot"]["documents"] == 0;
  }));
  EXPECT_EQ(NearKeys(c, "places", 0, 0), (std::vector<std::string>{"a", "b"}));
  auto items = Near(c, {{"table", "places"}, {"lat", 0}, {"lon", 0}, {"values", true}});
  ASSERT_OK(items);
  ASSERT_EQ(items->size(), 2u);
  EXPECT_EQ((*items)[0].value, (Value{{"lat", 0}, {"lon", 0}, {"name", "first"}}));
  EXPECT_EQ((*items)[1].value, (Value{{"lat", 0}, {"lon", 0.001}, {"name", "second"}}));
  // An evicted document moved by merge (read back from the store first).
  manual_.Advance(std::chrono::seconds(61));
  ASSERT_OK(c.Merge("places", "a", {{"lon", 0.002}}));
  EXPECT_EQ(NearKeys(c, "places", 0, 0), (std::vector<std::string>{"b", "a"}));
}

// An answer whose first document is in memory and the rest evicted: the
// store worker goes on from the first evicted one with what was read, and
// the answer is the same as when all are in memory.
TEST_F(GeoTiersTest, AnAnswerPartlyInMemoryIsFinishedOnAStoreWorker) {
  ASSERT_OK(server::AddGeoIndex(*store_, {"places", {"lat"}, {"lon"}, {}}));
  StartManual();
  client::Client& c = Alice();
  for (int i = 0; i < 3; ++i) {
    ASSERT_OK(c.Set("places", "p" + std::to_string(i), {{"lat", 0}, {"lon", 0.001 * i}, {"n", i}}));
  }
  manual_.Advance(std::chrono::seconds(11));
  ASSERT_TRUE(WaitForTiers(c, [](const Value& t) { return t["packed"]["documents"] == 3; }));
  manual_.Advance(std::chrono::seconds(61));
  ASSERT_TRUE(WaitForTiers(c, [](const Value& t) {
    return t["packed"]["documents"] == 0 && t["hot"]["documents"] == 0;
  }));
  ASSERT_OK(c.Get("places", "p0"));  // back in memory; p1 and p2 stay evicted
  auto items = Near(c, {{"table", "places"}, {"lat", 0}, {"lon", 0}, {"values", true}});
  ASSERT_OK(items);
  ASSERT_EQ(Keys(*items), (std::vector<std::string>{"p0", "p1", "p2"}));
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ((*items)[size_t(i)].value, (Value{{"lat", 0}, {"lon", 0.001 * i}, {"n", i}}));
  }
}

}  // namespace
}  // namespace skiff::testing
