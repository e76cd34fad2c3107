// GeoIndex packing itself again (geo/repack_policy.h): when packs start,
// that they keep answers exact, and that writes and Resets made during a
// pack are replayed or win.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "geo/geo_index.h"

#include "test/geo/geo_index_oracle.h"
#include "test/status_matchers.h"

namespace skiff::geo {
namespace {

// Points as one by one inserts leave them, the packs on the way included:
// fewer bytes than a tree grown alone, and the same answers. Each insert
// waits for the pack it may have started, so the packs fall on the same
// inserts in every run whatever the scheduler does.

TEST(GeoIndexRepackTest, GrowingIndexPacksItselfAndStaysExact) {
  GeoIndex index;  // the default policy
  Points points;
  Generator gen(10);
  for (int i = 0; i < 30'000; ++i) {
    const Point p = gen.Mixed();
    const std::string key = std::to_string(i + 1);
    Touch(index);  // a query between writes: each due pack starts at its write
    ASSERT_OK(index.Upsert(key, p.lat, p.lon));
    index.AwaitRepack();
    points[key] = p;
  }
  const GeoIndexStats stats = index.Stats();
  // At 4,096, 8,192, 12,288 and 16,384 points (4,096 changes each), then
  // whenever a quarter of the points changed: 21,845 and 29,126.
  EXPECT_EQ(stats.repacks, 6u);
  EXPECT_EQ(stats.points, 30'000u);
  EXPECT_LE(stats.BytesPerPoint(), 112);  // grown alone: about 119
  for (int i = 0; i < 40; ++i) {
    const Point c = gen.Mixed();
    std::vector<GeoHit> got;
    ASSERT_OK(index.Nearest(At(c.lat, c.lon, 500), &got));
    EXPECT_TRUE(SameAnswer(got, BruteForce(points, At(c.lat, c.lon, 500))))
        << c.lat << "," << c.lon;
  }
}

// With no query since the last pack, writes start a pack only once they
// number as many as the index's points; a query starts the pack a quarter
// of that made due, and the pack takes in every point.
TEST(GeoIndexRepackTest, APackWaitsForAQueryOrAnIndexWorthOfWrites) {
  GeoIndex index(Packing(1000));
  Points points;
  Generator gen(13);
  auto move = [&](int n) {
    for (int i = 0; i < n; ++i) {
      const std::string key = std::to_string(i % 10'000);
      points[key] = gen.Mixed();
      ASSERT_OK(index.Upsert(key, points[key].lat, points[key].lon));
    }
    index.AwaitRepack();
  };
  // Inserts: 1,000 changes on 1,000 points pack once; after that the
  // changes since the pack never reach the points.
  move(10'000);
  const GeoIndexStats grown = index.Stats();
  EXPECT_EQ(grown.repacks, 1u);
  std::vector<GeoHit> got;
  ASSERT_OK(index.Nearest(At(0, 0, 50), &got));
  EXPECT_TRUE(SameAnswer(got, BruteForce(points, At(0, 0, 50))));
  index.AwaitRepack();
  const GeoIndexStats packed = index.Stats();
  EXPECT_EQ(packed.repacks, 2u);
  EXPECT_LT(packed.bytes, grown.bytes);  // a packed tree's nodes are full
  // 3,000 moves, more than a quarter of the points: due, but no query came.
  move(3'000);
  EXPECT_EQ(index.Stats().repacks, 2u);
  for (int i = 0; i < 20; ++i) {
    const Point c = gen.Mixed();
    ASSERT_OK(index.Nearest(At(c.lat, c.lon, 60), &got));
    EXPECT_TRUE(SameAnswer(got, BruteForce(points, At(c.lat, c.lon, 60))));
  }
  index.AwaitRepack();
  EXPECT_EQ(index.Stats().repacks, 3u);
  // Queries came after that pack started: the 2,500th move starts the next.
  move(2'499);
  EXPECT_EQ(index.Stats().repacks, 3u);
  move(1);
  EXPECT_EQ(index.Stats().repacks, 4u);
  // None since: only the 10,000th move does.
  move(9'999);
  EXPECT_EQ(index.Stats().repacks, 4u);
  move(1);
  EXPECT_EQ(index.Stats().repacks, 5u);
  // Removals with no query: once the slots they free reach a quarter of
  // the points left (2,000 removed of 10,000), a pack gives them back.
  for (int i = 0; i < 2'000; ++i) {
    const std::string key = std::to_string(i);
    points.erase(key);
    EXPECT_TRUE(index.Remove(key));
    index.AwaitRepack();
    EXPECT_EQ(index.Stats().repacks, i < 1'999 ? 5u : 6u) << i;
  }
  ASSERT_OK(index.Nearest(At(0, 0, 50), &got));
  EXPECT_TRUE(SameAnswer(got, BruteForce(points, At(0, 0, 50))));
}

// Writes made while a pack builds its tree are replayed into it before it
// is swapped in: moves, removals and new keys made at the worst moment
// (after the copy) are all in the packed index.
TEST(GeoIndexRepackTest, WritesDuringAPackAreReplayedIntoIt) {
  Points points;
  Points late;  // written by the hook, on the packing thread
  std::vector<std::string> removed;
  GeoIndex* self = nullptr;
  bool hooked = false;
  GeoIndex index(Packing(200, {}, [&] {
    if (hooked) return;
    hooked = true;
    Generator gen(12);
    for (int i = 0; i < 50; ++i) {  // moves
      const std::string key = std::to_string(1 + gen.Below(200));
      late[key] = gen.Mixed();
      ASSERT_OK(self->Upsert(key, late[key].lat, late[key].lon));
    }
    for (int i = 0; i < 30; ++i) {  // new keys
      const std::string key = "new" + std::to_string(i);
      late[key] = gen.Mixed();
      ASSERT_OK(self->Upsert(key, late[key].lat, late[key].lon));
    }
    for (int i = 181; i <= 200; ++i) {  // removals
      removed.push_back(std::to_string(i));
      self->Remove(removed.back());
    }
  }));
  self = &index;
  Touch(index);
  Generator gen(11);
  for (int i = 1; i <= 200; ++i) {  // the 200th starts the pack
    points[std::to_string(i)] = gen.Mixed();
    ASSERT_OK(index.Upsert(std::to_string(i), points[std::to_string(i)].lat,
                           points[std::to_string(i)].lon));
  }
  index.AwaitRepack();
  ASSERT_TRUE(hooked);
  EXPECT_EQ(index.Stats().repacks, 1u);
  for (const auto& [key, p] : late) points[key] = p;
  for (const std::string& key : removed) points.erase(key);
  EXPECT_EQ(index.size(), points.size());
  for (const auto& [key, p] : points) {
    const auto found = index.Find(key);
    ASSERT_TRUE(found.has_value()) << key;
    EXPECT_EQ(found->lat, p.lat) << key;
    EXPECT_EQ(found->lon, p.lon) << key;
  }
  for (const std::string& key : removed) EXPECT_FALSE(index.Find(key).has_value()) << key;
  for (int i = 0; i < 20; ++i) {
    const Point c = gen.Mixed();
    std::vector<GeoHit> got;
    ASSERT_OK(index.Nearest(At(c.lat, c.lon, 60), &got));
    EXPECT_TRUE(SameAnswer(got, BruteForce(points, At(c.lat, c.lon, 60))));
  }
}

// A Reset made between a pack's start and its copy wins too: the writes
// logged before it belong to the index it replaced and are not replayed.
TEST(GeoIndexRepackTest, AResetBeforeThePackCopiesWins) {
  const std::vector<GeoEntry> fresh = {{"r0", 1, 2}, {"r1", 3, 4}};
  GeoIndex* self = nullptr;
  bool hooked = false;
  GeoIndex index(Packing(100, [&] {
    if (hooked) return;
    hooked = true;
    ASSERT_OK(self->Upsert("ghost", 5, 6));
    ASSERT_OK(self->Upsert("r1", 7, 8));
    ASSERT_OK(self->Reset(fresh));
  }));
  self = &index;
  Touch(index);
  for (int i = 0; i < 100; ++i) ASSERT_OK(index.Upsert("k" + std::to_string(i), 10, 10));
  index.AwaitRepack();
  EXPECT_EQ(index.Stats().repacks, 0u);
  EXPECT_EQ(index.size(), 2u);
  EXPECT_FALSE(index.Find("ghost").has_value());
  const auto r1 = index.Find("r1");
  ASSERT_TRUE(r1.has_value());
  EXPECT_EQ(r1->lat, 3.0);
  EXPECT_EQ(r1->lon, 4.0);
  // Packing goes on afterwards: the next due pack is swapped in.
  Touch(index);
  for (int i = 0; i < 100; ++i) ASSERT_OK(index.Upsert("n" + std::to_string(i), -10, -10));
  index.AwaitRepack();
  EXPECT_EQ(index.Stats().repacks, 1u);
  EXPECT_EQ(index.size(), 102u);
}

// A Reset while a pack builds wins: the pack's tree, made from the points
// before the Reset, is dropped.
TEST(GeoIndexRepackTest, AResetDuringAPackWins) {
  std::vector<GeoEntry> fresh;
  for (int i = 0; i < 50; ++i) fresh.push_back({"r" + std::to_string(i), 1.0 * i, 2.0 * i});
  GeoIndex* self = nullptr;
  GeoIndex index(Packing(100, {}, [&] { ASSERT_OK(self->Reset(fresh)); }));
  self = &index;
  Touch(index);
  for (int i = 0; i < 100; ++i) ASSERT_OK(index.Upsert("k" + std::to_string(i), 10, 10));
  index.AwaitRepack();
  EXPECT_EQ(index.Stats().repacks, 0u);
  EXPECT_EQ(index.size(), fresh.size());
  EXPECT_FALSE(index.Find("k0").has_value());
  const auto r7 = index.Find("r7");
  ASSERT_TRUE(r7.has_value());
  EXPECT_EQ(r7->lat, 7.0);
  EXPECT_EQ(r7->lon, 14.0);
}

}  // namespace
}  // namespace skiff::geo
