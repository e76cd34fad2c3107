// GeoIndex: the points of one table's documents, for "which keys are nearest
// to here" queries.
//
// Each key has at most one point (latitude, longitude in degrees, WGS 84
// numbers on a sphere). Points are kept as 3-D unit vectors in an R-tree
// (Boost.Geometry), so nearness is straight-line (chord) distance between
// vectors, which orders points exactly as great-circle distance does, with no
// special case at the poles or at +-180 degrees. Distances are reported in
// whole micrometres on a sphere of radius kEarthRadiusM (the IUGG mean
// radius): the sphere itself is up to 0.5% off the Earth, so finer digits
// would say nothing, and a fixed resolution is far cheaper to write as text
// than shortest round-trip doubles.
//
// A query asks for the `limit` nearest points, optionally only those within
// `radius_m` of the centre and/or inside a box. The box is a latitude /
// longitude rectangle centred on the query point: it spans box_h/2 metres
// north and south along the meridian (clamped at the poles) and box_w/2
// metres east and west along the parallel through the centre, wrapping across
// +-180 degrees; when box_w/2 reaches half the length of that parallel it
// spans every longitude. (Redis's GEOSEARCH BYBOX measures the east-west
// half-width at each candidate's latitude instead; the two agree to well
// under a millimetre for boxes of a few kilometres away from the poles.)
// Answers are ordered by distance as reported (in micrometres), then by key
// (bytewise), and are exact: no point nearer than the last one returned is
// left out.
//
// A tree grown point by point answers about a quarter slower than one packed
// in a single pass, and its keys lie in memory in the order they came, not
// in space. So once the points placed, moved or removed since the last pack
// reach a quarter of the index (and at least RepackPolicy::min_changes), the index
// packs itself again on a thread of its own: it copies the points under the
// read lock, builds a packed tree with the keys in space order outside any
// lock, then, under the write lock, replays the writes made meanwhile and
// swaps the new tree in. Queries and writes go on during the build; the
// index holds two copies of itself until the swap.
//
// A pack pays off in the queries after it, so it waits for one: a due pack
// starts at the write that makes it due if a query came since the last pack
// started, else at the next query, or, with no query, once the writes
// since the last pack number as many as the points or the slots freed by
// removals reach a quarter of them (which bounds the memory a long run of
// writes wastes). A bulk load with no query among its inserts packs once,
// at RepackPolicy::min_changes points, and never again (the changes since
// a pack stay fewer than the points), where it used to pack at every
// quarter of growth (about 2 us an insert while 100,000 went in); the first
// query after it starts one pack of everything.
//
// Thread-safe: one reader/writer lock of its own; queries run in parallel,
// writes are exclusive, and a waiting write goes before later queries. The index never calls out
// while holding it, so a caller may hold its own lock (a key's shard lock) around any call: the
// lock order is always caller first, then the index.
#ifndef SKIFF_SERVER_INTERNAL_GEO_INDEX_H_
#define SKIFF_SERVER_INTERNAL_GEO_INDEX_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "base/status.h"
#include "server/internal/writer_first_mutex.h"

namespace skiff::server::internal {

struct GeoQuery {
  double lat = 0;
  double lon = 0;
  size_t limit = 100;
  std::optional<double> radius_m;
  std::optional<double> box_w_m;  // box_w_m and box_h_m are given together
  std::optional<double> box_h_m;
};

struct GeoHit {
  std::string key;
  int64_t dist_um = 0;  // great-circle distance, rounded to the micrometre
  double dist_m() const { return double(dist_um) / 1e6; }
};

struct GeoPosition {
  double lat = 0;
  double lon = 0;
};

struct GeoEntry {
  std::string key;
  double lat = 0;
  double lon = 0;
};

struct GeoIndexStats {
  size_t points = 0;
  int64_t bytes = 0;        // held by the index's containers (keys, table, tree)
  int64_t allocations = 0;  // heap blocks behind `bytes`
  uint64_t repacks = 0;     // packs on the index's own thread, finished
  double BytesPerPoint() const { return points == 0 ? 0 : double(bytes) / double(points); }
};

struct RepackPolicy {
  // Fewer changes than this never start a pack, however small the index.
  size_t min_changes = 4096;
  // Called on the packing thread with no lock held: before the points are
  // copied, and after that, before the new tree is built (tests make writes
  // and Resets there, to see them replayed or winning). Neither may call
  // AwaitRepack (the thread would wait for itself).
  std::function<void()> before_copy;
  std::function<void()> after_copy;
};

class GeoIndex {
 public:
  static constexpr double kEarthRadiusM = 6'371'008.8;
  static constexpr size_t kMaxLimit = 10'000;

  explicit GeoIndex(RepackPolicy policy = {});
  // Waits for a pack in progress.
  ~GeoIndex();
  GeoIndex(const GeoIndex&) = delete;
  GeoIndex& operator=(const GeoIndex&) = delete;

  // bad_request unless lat is in [-90, 90] and lon in [-180, 180] (finite).
  static Status CheckPosition(double lat, double lon);
  // bad_request for a query CheckPosition refuses, a limit outside
  // [1, kMaxLimit], or a radius or box side that is not a positive number.
  static Status CheckQuery(const GeoQuery& query);

  // Sets `key`'s point, replacing any earlier one (a move). bad_request for
  // an invalid position; the index is then unchanged.
  Status Upsert(std::string_view key, double lat, double lon);

  // Removes `key`'s point; false when it had none.
  bool Remove(std::string_view key);

  // Replaces the whole index with `entries` (a rebuild at start; much faster
  // than one Upsert each, and the tree comes out tighter). A key given twice
  // keeps its last position. bad_request naming the first invalid entry, and
  // the index is then unchanged.
  Status Reset(const std::vector<GeoEntry>& entries);

  // The nearest points, ordered as the header says, into `*out` (replacing
  // its contents; its capacity is reused). bad_request when CheckQuery
  // refuses the query, and `*out` is then left alone. May start a due pack
  // (see the header), which changes no answer.
  Status Nearest(const GeoQuery& query, std::vector<GeoHit>* out);

  // `key`'s point as given, or nullopt.
  std::optional<GeoPosition> Find(std::string_view key) const;

  size_t size() const;
  GeoIndexStats Stats() const;

  // Returns once the pack started by a write or query that returned before
  // this call, if any, is over (swapped in or dropped). A pack started by a
  // call still under way on another thread may begin after it returns.
  void AwaitRepack();

 private:
  class Impl;
  struct LoggedWrite {
    std::string key;
    std::optional<GeoPosition> position;  // nullopt: removed
  };

  // With mu_ held for writing, after a write: logs it for the pack in
  // progress, if any; counts it; whether a pack is due now (which it then
  // marks started); and, when a pack is over, its log dropped and the mark
  // cleared.
  void Log(std::string_view key, std::optional<GeoPosition> position);
  bool CountChange();
  bool StartPackIfDue();
  // With mu_ held (either way): a quarter of the points, at least
  // min_changes; and whether that many changes came, with no pack under way.
  size_t QuarterOfPoints() const;
  bool EnoughChanges() const;
  void EndRepack();
  void StartRepack();
  void Repack();

  const RepackPolicy policy_;
  mutable WriterFirstMutex mu_;
  std::unique_ptr<Impl> impl_;    // SKIFF_GUARDED_BY(mu_)
  size_t changes_ = 0;            // SKIFF_GUARDED_BY(mu_): since the last pack
  bool repacking_ = false;        // SKIFF_GUARDED_BY(mu_)
  uint64_t generation_ = 0;       // SKIFF_GUARDED_BY(mu_): bumped by Reset
  uint64_t pack_generation_ = 0;  // SKIFF_GUARDED_BY(mu_): generation_ at the pack's start
  uint64_t repacks_ = 0;          // SKIFF_GUARDED_BY(mu_)
  // A query came since the last pack started (set by queries under the read
  // lock, hence atomic; cleared under the write lock when a pack starts).
  std::atomic<bool> queried_{false};
  std::vector<LoggedWrite> log_;  // SKIFF_GUARDED_BY(mu_): writes during a pack
  Mutex thread_mu_;               // held to start or join the packing thread
  std::thread packer_ SKIFF_GUARDED_BY(thread_mu_);
};

}  // namespace skiff::server::internal

#endif  // SKIFF_SERVER_INTERNAL_GEO_INDEX_H_
