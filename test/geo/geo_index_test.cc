// GeoIndex against the brute-force oracle (geo_index_oracle.h): exact
// answers on the sphere, at the poles and across the antimeridian, ties,
// radius and box edges, bad input, Reset, memory, and queries alongside
// writes.
#include "geo/geo_index.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "test/geo/geo_index_oracle.h"
#include "test/status_matchers.h"

namespace skiff::geo {
namespace {

class GeoIndexTest : public ::testing::Test {
 protected:
  void Put(const std::string& key, Point p) {
    ASSERT_OK(index_.Upsert(key, p.lat, p.lon));
    points_[key] = p;
  }
  void Drop(const std::string& key) {
    EXPECT_EQ(index_.Remove(key), points_.erase(key) == 1) << key;
  }
  void ExpectOracle(const GeoQuery& q) {
    std::vector<GeoHit> got;
    ASSERT_OK(index_.Nearest(q, &got));
    EXPECT_TRUE(SameAnswer(got, BruteForce(points_, q)))
        << "query at " << q.lat << "," << q.lon << " limit " << q.limit << " radius "
        << q.radius_m.value_or(-1) << " box " << q.box_w_m.value_or(-1) << "x"
        << q.box_h_m.value_or(-1);
  }
  // A spread of query shapes around `centre`.
  void ExpectOracleAround(Point centre, Generator& gen) {
    for (size_t limit : {size_t(1), size_t(7), size_t(16), size_t(17), size_t(100), size_t(500),
                         points_.size() + 3}) {
      GeoQuery q = At(centre.lat, centre.lon, std::min(limit, kMaxLimit));
      ExpectOracle(q);
      q.radius_m = std::exp(gen.Uniform(std::log(1e3), std::log(2.5e7)));
      ExpectOracle(q);
      q.radius_m.reset();
      q.box_w_m = std::exp(gen.Uniform(std::log(1e3), std::log(4e7)));
      q.box_h_m = std::exp(gen.Uniform(std::log(1e3), std::log(4e7)));
      ExpectOracle(q);
      q.radius_m = std::exp(gen.Uniform(std::log(1e3), std::log(2.5e7)));
      ExpectOracle(q);
    }
  }

  // Packs after a few hundred changes, so that the oracle tests below run
  // on a packed tree and a grown one side by side, with packs finishing
  // while they write and ask.
  GeoIndex index_{Packing(300)};
  Points points_;
};

TEST_F(GeoIndexTest, EmptyIndexAnswersNothing) {
  std::vector<GeoHit> got{{"stale", 1}};
  ASSERT_OK(index_.Nearest(At(10, 20, 5), &got));
  EXPECT_TRUE(got.empty());
  EXPECT_EQ(index_.size(), 0u);
  EXPECT_FALSE(index_.Remove("nothing"));
  EXPECT_FALSE(index_.Find("nothing").has_value());
}

TEST_F(GeoIndexTest, MatchesBruteForceOnTheSphere) {
  Generator gen(1);
  for (int i = 0; i < 3000; ++i) Put(gen.Key(), gen.Mixed());
  for (int i = 0; i < 12; ++i) ExpectOracleAround(gen.Mixed(), gen);
}

TEST_F(GeoIndexTest, MatchesBruteForceAtThePolesAndAcrossTheAntimeridian) {
  Generator gen(2);
  for (int i = 0; i < 1500; ++i) Put(gen.Key(), gen.NearPole());
  for (int i = 0; i < 1500; ++i) Put(gen.Key(), gen.NearAntimeridian());
  // Exactly at a pole, with different longitudes: one point.
  for (int i = 0; i < 5; ++i) Put(gen.Key(), {90, gen.Uniform(-180, 180)});
  for (Point centre : {Point{90, 0}, Point{-90, 123}, Point{89.9999, 45}, Point{-89.5, -179.9},
                       Point{0, 180}, Point{0, -180}, Point{10, 179.9999}, Point{-10, -179.95}}) {
    ExpectOracleAround(centre, gen);
  }
}

TEST_F(GeoIndexTest, PoleIsOnePointWhateverItsLongitude) {
  Put("north-a", {90, -170});
  Put("north-b", {90, 35});
  Put("south", {-90, 0});
  std::vector<GeoHit> got;
  ASSERT_OK(index_.Nearest(At(90, 100, 3), &got));
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].key, "north-a");
  EXPECT_EQ(got[0].dist_m(), 0);
  EXPECT_EQ(got[1].key, "north-b");
  EXPECT_EQ(got[1].dist_m(), 0);
  EXPECT_EQ(got[2].key, "south");
  EXPECT_NEAR(got[2].dist_m(), kPi * kR, 0.5);
}

TEST_F(GeoIndexTest, TiesAreBrokenByKeyBytewise) {
  // Same place, keys whose order differs between signed and unsigned bytes.
  for (const char* key : {"b", "a", "\xc3\xa9", "A", "ab"}) Put(key, {48.8566, 2.3522});
  Put("near", {48.8567, 2.3522});
  std::vector<GeoHit> got;
  ASSERT_OK(index_.Nearest(At(48.8566, 2.3522, 3), &got));
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].key, "A");
  EXPECT_EQ(got[1].key, "a");
  EXPECT_EQ(got[2].key, "ab");
  ASSERT_OK(index_.Nearest(At(48.8566, 2.3522, 6), &got));
  ASSERT_EQ(got.size(), 6u);
  EXPECT_EQ(got[3].key, "b");
  EXPECT_EQ(got[4].key, "\xc3\xa9");
  EXPECT_EQ(got[5].key, "near");
  EXPECT_NEAR(got[5].dist_m(), 11.12, 0.01);  // 1e-4 degree of latitude
}

TEST_F(GeoIndexTest, DuplicatePositionsAtTheLimitBoundary) {
  // 40 keys share one place: whatever the limit, the cut falls inside the tie
  // and must keep the smallest keys.
  Generator gen(3);
  for (int i = 0; i < 300; ++i) Put(gen.Key(), {gen.Uniform(-1, 1), gen.Uniform(-1, 1)});
  for (int i = 0; i < 40; ++i) Put("dup" + std::to_string(100 + i), {0.5, 0.5});
  for (size_t limit : {1, 10, 39, 40, 41, 60}) ExpectOracle(At(0.5, 0.5, limit));
  for (size_t limit : {1, 10, 39, 40, 41, 60}) ExpectOracle(At(0.52, 0.49, limit));
}

TEST_F(GeoIndexTest, DistancesAreGreatCircleMetres) {
  Put("london", {51.5074, -0.1278});
  Put("paris", {48.8566, 2.3522});
  Put("sydney", {-33.8688, 151.2093});
  std::vector<GeoHit> got;
  ASSERT_OK(index_.Nearest(At(51.5074, -0.1278, 3), &got));
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].key, "london");
  EXPECT_EQ(got[0].dist_m(), 0);
  EXPECT_EQ(got[1].key, "paris");
  EXPECT_NEAR(got[1].dist_m(), 343'556.5, 0.1);  // haversine on the 6,371,008.8 m sphere
  EXPECT_EQ(got[2].key, "sydney");
  EXPECT_NEAR(got[2].dist_m(), Haversine(51.5074, -0.1278, -33.8688, 151.2093), 1e-3);
}

// Points closer together than a micrometre share a reported distance, so
// they come in key order, and a limit that cuts through them keeps the
// smallest keys, whichever point is nearest to the last bit.
TEST_F(GeoIndexTest, PointsWithinAMicrometreComeInKeyOrder) {
  // 1,111.951247 m north of the centre plus 0.116 um to 0.45 um: each point
  // 1e-13 degrees (11 nm) past the one before, the nearest with the largest key.
  for (int i = 0; i < 30; ++i) Put("p" + std::to_string(39 - i), {0.010000004 + i * 1e-13, 0});
  std::vector<GeoHit> got;
  for (size_t limit : {5, 20, 30}) {
    ASSERT_OK(index_.Nearest(At(0, 0, limit), &got));
    ASSERT_EQ(got.size(), limit);
    for (size_t i = 0; i < limit; ++i) {
      EXPECT_EQ(got[i].dist_um, 1'111'951'247) << i;
      EXPECT_EQ(got[i].key, "p" + std::to_string(10 + i));
    }
  }
}

// A widening round whose bound cuts through the micrometre that 30 points
// share must not stop there: points left outside could have smaller keys.
// Placed for the pilot's guess (16 nearest, scaled to 20 with a 1.2 margin:
// 149.18 m) to fall inside the cluster's micrometre; with another pilot
// size or margin it still checks the answer, but not this path.
TEST_F(GeoIndexTest, ABoundThroughASharedMicrometreWidens) {
  for (int i = 0; i < 16; ++i) Put("a" + std::to_string(10 + i), {0.0010000059999999995, 0});
  for (int i = 0; i < 30; ++i) {
    Put("c" + std::to_string(10 + (29 - i)), {0.0013416488363582151 + (i - 15) * 1e-13, 0});
  }
  std::vector<GeoHit> got;
  ASSERT_OK(index_.Nearest(At(0, 0, 20), &got));
  ASSERT_EQ(got.size(), 20u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(got[16 + i].dist_um, got[16].dist_um);
    EXPECT_EQ(got[16 + i].key, "c" + std::to_string(10 + i));
  }
  ExpectOracle(At(0, 0, 20));
}

TEST_F(GeoIndexTest, RadiusEdges) {
  Put("origin", {0, 0});
  Put("east", {0, 0.01});  // 1,111.95 m away
  std::vector<GeoHit> got;
  const double d = Haversine(0, 0, 0, 0.01);
  GeoQuery q = At(0, 0, 10);
  q.radius_m = d * (1 - 1e-9);
  ASSERT_OK(index_.Nearest(q, &got));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].key, "origin");
  q.radius_m = d * (1 + 1e-9);
  ASSERT_OK(index_.Nearest(q, &got));
  EXPECT_EQ(got.size(), 2u);
  // The radius holds what is reported within it: "east" is 0.34 um past
  // 1,111.950802 m and reported at it, so that radius keeps it, and one
  // 0.1 um shorter does not.
  ASSERT_EQ(got[1].dist_um, 1'111'950'802);
  q.radius_m = 1'111.950802;
  ASSERT_OK(index_.Nearest(q, &got));
  EXPECT_EQ(got.size(), 2u);
  q.radius_m = 1'111.9508019;
  ASSERT_OK(index_.Nearest(q, &got));
  EXPECT_EQ(got.size(), 1u);
  // A radius past half the circumference covers the sphere.
  q.radius_m = 1e9;
  q.lat = -0.0001;
  q.lon = 180;
  ASSERT_OK(index_.Nearest(q, &got));
  EXPECT_EQ(got.size(), 2u);
  // A tiny radius around an empty spot.
  q = At(10, 10, 10);
  q.radius_m = 0.001;
  ASSERT_OK(index_.Nearest(q, &got));
  EXPECT_TRUE(got.empty());
}

// Near the antipode a distance computed from a chord is only good to about
// 0.1 m, yet a radius still keeps every point reported within it.
TEST_F(GeoIndexTest, RadiusNearTheAntipodeKeepsWhatIsReportedWithin) {
  for (int i = 1; i <= 60; ++i) Put("p" + std::to_string(i), {0, 180 - i * 1e-5});
  std::vector<GeoHit> all;
  ASSERT_OK(index_.Nearest(At(0, 0, 100), &all));
  ASSERT_EQ(all.size(), 60u);
  for (const GeoHit& h : all) {
    GeoQuery q = At(0, 0, 100);
    q.radius_m = h.dist_m();
    std::vector<GeoHit> got;
    ASSERT_OK(index_.Nearest(q, &got));
    ASSERT_FALSE(got.empty());
    EXPECT_EQ(got.back().dist_um, h.dist_um) << h.key;  // itself, the farthest kept
    for (const GeoHit& g : got) EXPECT_LE(g.dist_m(), *q.radius_m);
  }
}

TEST_F(GeoIndexTest, BoxSpansTheAntimeridian) {
  Put("west-edge", {0, -179.99});  // 1.11 km west of 180, across the line
  Put("east-edge", {0, 179.99});
  Put("far", {0, 179.9});  // 11.1 km
  GeoQuery q = At(0, 180, 10);
  q.box_w_m = 5'000;  // +-2.5 km east-west
  q.box_h_m = 100;
  std::vector<GeoHit> got;
  ASSERT_OK(index_.Nearest(q, &got));
  ASSERT_EQ(got.size(), 2u);
  // As near as each other, up to rounding of the vectors.
  EXPECT_TRUE((got[0].key == "east-edge" && got[1].key == "west-edge") ||
              (got[0].key == "west-edge" && got[1].key == "east-edge"));
  EXPECT_LE(std::abs(got[0].dist_um - got[1].dist_um), 1);
}

TEST_F(GeoIndexTest, BoxNearThePoleSpansEveryLongitudeOnceWideEnough) {
  Put("other-side", {89.9, -170});  // about 11 km from the pole, across it
  Put("this-side", {89.9, 10});
  GeoQuery q = At(89.95, 10, 10);  // between the two points and the pole
  q.box_h_m = 40'000;              // reaches over the pole
  q.box_w_m = 1'000;               // narrow along a short parallel
  std::vector<GeoHit> got;
  ASSERT_OK(index_.Nearest(q, &got));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].key, "this-side");
  // The parallel at 89.95 degrees is about 34.9 km round: a 40 km wide box
  // covers all of it.
  q.box_w_m = 40'000;
  ASSERT_OK(index_.Nearest(q, &got));
  EXPECT_EQ(got.size(), 2u);
}

TEST_F(GeoIndexTest, MovesRemovesAndReinsertsStayExact) {
  Generator gen(4);
  std::vector<std::string> keys;
  for (int i = 0; i < 2000; ++i) {
    keys.push_back(gen.Key());
    Put(keys.back(), gen.Mixed());
  }
  for (int round = 0; round < 4; ++round) {
    // Moves, some to the very same place, some far away.
    for (int i = 0; i < 500; ++i) {
      const std::string& key = keys[gen.Below(keys.size())];
      Put(key, gen.Below(5) == 0 ? points_[key] : gen.Mixed());
    }
    for (int i = 0; i < 200; ++i) Drop(keys[gen.Below(keys.size())]);
    // Removed keys come back elsewhere (reusing ids) and new keys arrive.
    for (int i = 0; i < 150; ++i) Put(keys[gen.Below(keys.size())], gen.Mixed());
    for (int i = 0; i < 50; ++i) {
      keys.push_back(gen.Key());
      Put(keys.back(), gen.Mixed());
    }
    EXPECT_EQ(index_.size(), points_.size());
    for (int i = 0; i < 3; ++i) ExpectOracleAround(gen.Mixed(), gen);
  }
  for (const auto& [key, p] : points_) {
    const auto found = index_.Find(key);
    ASSERT_TRUE(found.has_value()) << key;
    EXPECT_EQ(found->lat, p.lat);
    EXPECT_EQ(found->lon, p.lon);
  }
}

TEST_F(GeoIndexTest, AMovedPointIsFoundAtItsNewPlaceOnly) {
  Put("walker", {1.29, 103.85});
  Put("bystander", {1.30, 103.86});
  Put("walker", {-33.86, 151.2});
  std::vector<GeoHit> got;
  ASSERT_OK(index_.Nearest(At(1.29, 103.85, 1), &got));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].key, "bystander");
  ASSERT_OK(index_.Nearest(At(-33.86, 151.2, 1), &got));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].key, "walker");
  EXPECT_EQ(got[0].dist_m(), 0);
  EXPECT_EQ(index_.size(), 2u);
}

TEST_F(GeoIndexTest, RefusesBadInputAndStaysUnchanged) {
  Put("kept", {1, 2});
  const double nan = std::nan("");
  const double inf = std::numeric_limits<double>::infinity();
  for (Point p : {Point{91, 0}, Point{-90.0001, 0}, Point{0, 180.5}, Point{0, -181}, Point{nan, 0},
                  Point{0, nan}, Point{inf, 0}, Point{0, -inf}}) {
    EXPECT_STATUS(index_.Upsert("kept", p.lat, p.lon), kBadRequest);
    EXPECT_STATUS(index_.Upsert("new", p.lat, p.lon), kBadRequest);
    std::vector<GeoHit> out;
    EXPECT_STATUS(index_.Nearest(At(p.lat, p.lon, 1), &out), kBadRequest);
  }
  EXPECT_EQ(index_.size(), 1u);
  EXPECT_EQ(index_.Find("kept")->lat, 1);
  std::vector<GeoHit> got{{"untouched", 3}};
  auto refused = [&](GeoQuery q) {
    EXPECT_STATUS(index_.Nearest(q, &got), kBadRequest);
    EXPECT_EQ(got.size(), 1u);
  };
  refused(At(0, 0, 0));
  refused(At(0, 0, kMaxLimit + 1));
  for (double bad : {0.0, -1.0, nan, inf, -inf}) {
    GeoQuery q = At(0, 0, 5);
    q.radius_m = bad;
    refused(q);
    q = At(0, 0, 5);
    q.box_w_m = bad;
    q.box_h_m = 10;
    refused(q);
    q.box_w_m = 10;
    q.box_h_m = bad;
    refused(q);
  }
  GeoQuery half_box = At(0, 0, 5);
  half_box.box_w_m = 10;
  refused(half_box);
  EXPECT_EQ(got[0].key, "untouched");
  // Edges of the valid ranges are accepted.
  EXPECT_OK(index_.Upsert("corner", -90, -180));
  EXPECT_OK(index_.Upsert("corner2", 90, 180));
  EXPECT_OK(index_.Nearest(At(-90, 180, kMaxLimit), &got));
  EXPECT_EQ(got.size(), 3u);
}

TEST_F(GeoIndexTest, ResetEqualsUpsertsAndKeepsTheLastOfADuplicate) {
  Generator gen(5);
  std::vector<GeoEntry> entries;
  for (int i = 0; i < 2500; ++i) {
    const Point p = gen.Mixed();
    entries.push_back({gen.Key(), p.lat, p.lon});
  }
  entries.push_back({entries[10].key, 5, 5});  // moved before the index existed
  Put("replaced", {0, 0});                     // gone after the reset
  ASSERT_OK(index_.Reset(entries));
  points_.clear();
  for (const GeoEntry& e : entries) points_[e.key] = {e.lat, e.lon};
  EXPECT_EQ(index_.size(), 2500u);
  EXPECT_FALSE(index_.Find("replaced").has_value());
  EXPECT_EQ(index_.Find(entries[10].key)->lat, 5);
  for (int i = 0; i < 6; ++i) ExpectOracleAround(gen.Mixed(), gen);
  // Writes after a reset go to the packed tree.
  for (int i = 0; i < 300; ++i) Put(entries[gen.Below(entries.size())].key, gen.Mixed());
  ExpectOracleAround(gen.Mixed(), gen);

  std::vector<GeoEntry> bad = entries;
  bad[7].lon = 200;
  EXPECT_STATUS(index_.Reset(bad), kBadRequest);
  EXPECT_EQ(index_.size(), 2500u);
  ExpectOracle(At(1, 1, 50));
}

// A filtered query is exact among the keys the filter keeps, as if the
// others were not in the index (cluster mode's share of a near): checked
// against the oracle over only those points, sparse and dense filters.
TEST_F(GeoIndexTest, FilteredQueriesMatchBruteForceOverTheKeptKeys) {
  Generator gen(9);
  for (int i = 0; i < 3000; ++i) Put(gen.Key(), gen.Mixed());
  for (const size_t one_in : {size_t(2), size_t(3), size_t(50)}) {
    const KeyFilter keep = [one_in](std::string_view key) {
      return std::hash<std::string_view>{}(key) % one_in == 0;
    };
    Points kept;
    for (const auto& [key, p] : points_) {
      if (keep(key)) kept[key] = p;
    }
    for (int i = 0; i < 6; ++i) {
      const Point centre = gen.Mixed();
      for (size_t limit : {size_t(1), size_t(16), size_t(100), kept.size() + 1}) {
        GeoQuery q = At(centre.lat, centre.lon, std::min(limit, kMaxLimit));
        if (i % 2 == 1) q.radius_m = std::exp(gen.Uniform(std::log(1e5), std::log(2e7)));
        std::vector<GeoHit> got;
        ASSERT_OK(index_.Nearest(q, &got, &keep));
        EXPECT_TRUE(SameAnswer(got, BruteForce(kept, q)))
            << "one in " << one_in << " limit " << limit;
      }
    }
  }
}

// ReplaceWhere swaps the subset a filter names for what its source holds
// now, leaving every other point as it was.
TEST_F(GeoIndexTest, ReplaceWhereReplacesOnlyTheNamedSubset) {
  Generator gen(10);
  for (int i = 0; i < 2000; ++i) Put("a" + std::to_string(i), gen.Mixed());
  for (int i = 0; i < 2000; ++i) Put("b" + std::to_string(i), gen.Mixed());
  const KeyFilter is_b = [](std::string_view key) { return key.starts_with("b"); };
  // The source holds half the b points, moved, and one b point new.
  std::vector<GeoEntry> fresh;
  for (int i = 0; i < 2000; i += 2) {
    const Point p = gen.Mixed();
    fresh.push_back({"b" + std::to_string(i), p.lat, p.lon});
  }
  fresh.push_back({"b-new", 1, 2});
  ASSERT_OK(index_.ReplaceWhere(is_b, fresh));
  std::erase_if(points_, [&](const auto& entry) { return is_b(entry.first); });
  for (const GeoEntry& e : fresh) points_[e.key] = {e.lat, e.lon};
  EXPECT_EQ(index_.size(), points_.size());
  EXPECT_FALSE(index_.Find("b1").has_value());
  EXPECT_EQ(index_.Find("b-new")->lon, 2);
  for (int i = 0; i < 4; ++i) ExpectOracleAround(gen.Mixed(), gen);
  // An invalid entry changes nothing.
  std::vector<GeoEntry> bad = fresh;
  bad.back().lat = 91;
  EXPECT_STATUS(index_.ReplaceWhere(is_b, bad), kBadRequest);
  EXPECT_EQ(index_.size(), points_.size());
  ExpectOracle(At(1, 1, 50));
}

// A random mix of writes and queries against the oracle, the way a fuzzer
// would drive it, with a fixed seed so a failure repeats.
TEST_F(GeoIndexTest, RandomOperationsAgreeWithTheOracle) {
  Generator gen(6);
  std::vector<std::string> keys;
  for (int op = 0; op < 4000; ++op) {
    const size_t what = gen.Below(10);
    if (what < 5 || keys.empty()) {
      if (keys.empty() || gen.Below(3) == 0) keys.push_back(gen.Key());
      Put(keys[gen.Below(keys.size())], gen.Below(3) == 0 ? gen.Anywhere() : gen.NearPole());
    } else if (what < 7) {
      Drop(keys[gen.Below(keys.size())]);
    } else {
      GeoQuery q = At(0, 0, 1 + gen.Below(gen.Below(2) == 0 ? 20 : 400));
      const Point c = gen.Mixed();
      q.lat = c.lat;
      q.lon = c.lon;
      if (gen.Below(3) == 0) q.radius_m = gen.Uniform(1, 3e6);
      if (gen.Below(3) == 0) {
        q.box_w_m = gen.Uniform(1, 5e6);
        q.box_h_m = gen.Uniform(1, 5e6);
      }
      ExpectOracle(q);
    }
    if (::testing::Test::HasFailure()) break;
  }
  EXPECT_EQ(index_.size(), points_.size());
}

TEST_F(GeoIndexTest, MemoryIsCountedAndReturned) {
  const GeoIndexStats empty = index_.Stats();
  Generator gen(7);
  for (int i = 0; i < 20'000; ++i) {
    Put(std::to_string(i + 1), {gen.Uniform(1.19, 1.39), gen.Uniform(103.75, 103.95)});
  }
  index_.AwaitRepack();
  const GeoIndexStats full = index_.Stats();
  EXPECT_EQ(full.points, 20'000u);
  EXPECT_GT(full.bytes, 20'000 * 48);  // at least a slot (key and position) per point
  EXPECT_LE(full.BytesPerPoint(), 128);
  // A key too long for the string's inline buffer adds its own bytes.
  const std::string long_key(200, 'k');
  Put(long_key, {0, 0});
  EXPECT_GE(index_.Stats().bytes - full.bytes, 200);
  Drop(long_key);
  for (int i = 0; i < 20'000; ++i) Drop(std::to_string(i + 1));
  index_.AwaitRepack();
  const GeoIndexStats drained = index_.Stats();
  EXPECT_EQ(drained.points, 0u);
  // What stays are the grown arrays (slots, free list, table cells), never
  // per-point heap blocks: the allocation count is back to a handful.
  EXPECT_LE(drained.allocations, empty.allocations + 8);
}

// Readers run while a writer moves points: every answer is a well-formed
// nearest list (sorted, no key twice, limit respected). Run under
// ThreadSanitizer in CI, this also checks the locking.
TEST_F(GeoIndexTest, QueriesRunAlongsideWrites) {
  Generator gen(8);
  for (int i = 0; i < 3000; ++i) Put("k" + std::to_string(i), gen.Anywhere());
  std::atomic<bool> writing{true};
  std::atomic<int> bad{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 3; ++t) {
    readers.emplace_back([&, t] {
      Generator local(100 + t);
      std::vector<GeoHit> got;
      for (int i = 0; i < 400 || writing.load(); ++i) {
        if (i > 100'000) break;  // bounded whatever the scheduler does
        const Point c = local.Anywhere();
        if (!index_.Nearest(At(c.lat, c.lon, 50), &got).ok() || got.size() != 50) ++bad;
        for (size_t j = 1; j < got.size(); ++j) {
          if (got[j].dist_m() < got[j - 1].dist_m() ||
              (got[j].dist_m() == got[j - 1].dist_m() && got[j].key <= got[j - 1].key)) {
            ++bad;
          }
        }
      }
    });
  }
  const uint64_t packs_before = index_.Stats().repacks;
  Generator writer(9);
  for (int i = 0; i < 20'000; ++i) {
    const Point p = writer.Anywhere();
    ASSERT_OK(index_.Upsert("k" + std::to_string(writer.Below(3000)), p.lat, p.lon));
  }
  writing = false;
  for (std::thread& t : readers) t.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(index_.size(), 3000u);
  index_.AwaitRepack();
  // Packs ran alongside the readers too (20,000 moves of 3,000 points start
  // some whether or not a query came between them).
  EXPECT_GT(index_.Stats().repacks, packs_before);
}

}  // namespace
}  // namespace skiff::geo
