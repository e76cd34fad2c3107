// The geo benchmark's workload, pinned from the public hugedbbench `2023geo`
// code (github.com/kokizzu/hugedbbench, 2023geo/geobenchmark.go) and scaled
// only in time:
//
//   points   ids 1..N (N = 100,000), uniform in a 0.2 x 0.2 degree square
//            centred on lat 1.290270, lon 103.851959 (Singapore, ~22 km a side)
//   search   the 500 nearest points, with id and distance, nearest first, to
//            a centre drawn uniformly from the same square; the peers'
//            published query is a 4,440 m box (0.04 degree x 111,000 m)
//   moves    5,000 moves of ids 1..100, each moved 50 times to a new random
//            place in the square; then a sustained phase of moves of random
//            ids for a wall-time budget
//
// The original draws from Go's math/rand (seeds 99, 88, 77) inside 16
// goroutines, so its points and queries depend on scheduling; here each
// stream is a std::mt19937_64 with those seeds, drawn in a fixed order, so
// every target gets the same points and queries on every run and machine.
// The original's move k targets id k % 100, which makes 50 of its 5,000
// moves target id 0, never inserted; here those 50 move id 100.
//
// Moves are split between connections by id (id % connections), so all
// moves of one id go through one connection in order and every id's final
// place is known whatever the interleaving. Thread-compatible: build once,
// then read from any thread.
#ifndef SKIFF_SUPPORT_GEO_GEO_WORKLOAD_H_
#define SKIFF_SUPPORT_GEO_GEO_WORKLOAD_H_

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace skiff::bench::geo {

constexpr double kCentreLat = 1.290270;
constexpr double kCentreLon = 103.851959;
constexpr double kSideDeg = 0.2;
constexpr double kBoxM = 4'440;  // the published query's box side
constexpr size_t kLimit = 500;
constexpr size_t kPinnedPoints = 100'000;
constexpr size_t kPinnedQueries = 200'000;  // the page's cap on the search phase
constexpr size_t kMovedIds = 100;
constexpr size_t kMovesPerId = 50;
constexpr uint64_t kPointSeed = 99;
constexpr uint64_t kQuerySeed = 88;
constexpr uint64_t kMoveSeed = 77;

struct GeoPoint {
  uint64_t id = 0;
  double lat = 0;
  double lon = 0;
};

struct GeoSearch {
  double lat = 0;
  double lon = 0;
  size_t limit = kLimit;
  double box_m = kBoxM;  // side of the square box for targets whose query takes one
};

// A position uniform in the square, from a stream.
class SquareSampler {
 public:
  explicit SquareSampler(uint64_t seed) : rng_(seed) {}
  // [0, 1) from the top 53 bits: the same doubles on every platform, which
  // std::uniform_real_distribution does not promise.
  double Unit() { return double(rng_() >> 11) * 0x1.0p-53; }
  GeoPoint Next(uint64_t id) {
    GeoPoint p{id, 0, 0};
    p.lat = kCentreLat + (Unit() - 0.5) * kSideDeg;
    p.lon = kCentreLon + (Unit() - 0.5) * kSideDeg;
    return p;
  }
  uint64_t Below(uint64_t n) { return rng_() % n; }  // bias < 1e-13 for our n

 private:
  std::mt19937_64 rng_;
};

class GeoWorkload {
 public:
  // `points` points (ids 1..points) and the first `queries` search centres.
  GeoWorkload(size_t points, size_t queries);

  const std::vector<GeoPoint>& points() const { return points_; }
  size_t query_count() const { return queries_.size(); }
  GeoSearch Query(size_t i) const { return queries_[i]; }

  // The pinned move phase for connection `conn` of `conns`: its share of the
  // 5,000 moves, in order (ids 1..min(100, points)).
  std::vector<GeoPoint> PinnedMoves(size_t conn, size_t conns) const;
  // The sustained phase's stream for connection `conn`: ids spread over all
  // points that are this connection's (id % conns == conn % conns).
  class MoveStream {
   public:
    MoveStream(size_t conn, size_t conns, size_t points);
    GeoPoint Next();

   private:
    SquareSampler sampler_;
    size_t conn_, conns_, points_;
  };

 private:
  std::vector<GeoPoint> points_;
  std::vector<GeoSearch> queries_;
  std::vector<GeoPoint> pinned_moves_;  // all 5,000 in order
};

}  // namespace skiff::bench::geo

#endif  // SKIFF_SUPPORT_GEO_GEO_WORKLOAD_H_
