// GeoIndex: the points of one table's documents, for "which keys are nearest
// to here" queries (geo/query.h says what a query asks and how distances are
// measured).
//
// Each key has at most one point (latitude, longitude in degrees, WGS 84
// numbers on a sphere). Points are kept as 3-D unit vectors in an R-tree
// (internal/point_index.h), so nearness is straight-line (chord) distance
// between vectors, which orders points exactly as great-circle distance does
// (internal/sphere.h). Answers are ordered by distance as reported (in
// micrometres), then by key (bytewise), and are exact: no point nearer than
// the last one returned is left out.
//
// The index packs its tree again as writes thin it out (when: RepackPolicy,
// geo/repack_policy.h). A pack runs on a thread of its own: it copies the
// points under the read lock, builds a packed tree with the keys in space
// order outside any lock, then, under the write lock, replays the writes
// made meanwhile and swaps the new tree in. Queries and writes go on during
// the build; the index holds two copies of itself until the swap.
//
// Thread-safe: one reader/writer lock of its own (mu_, a capability clang's
// thread-safety analysis checks); queries run in parallel, writes are
// exclusive, and a waiting write goes before later queries. The index never
// calls out while holding it, so a caller may hold its own lock (a key's
// shard lock) around any call: the lock order is always caller first, then
// the index.
#ifndef SKIFF_GEO_GEO_INDEX_H_
#define SKIFF_GEO_GEO_INDEX_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "base/status.h"
#include "base/thread_annotations.h"
#include "geo/internal/writer_first_mutex.h"
#include "geo/query.h"
#include "geo/repack_policy.h"

namespace skiff::geo {

namespace internal {
class PointIndex;
}  // namespace internal

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

class GeoIndex {
 public:
  explicit GeoIndex(RepackPolicy policy = {});
  // Waits for a pack in progress.
  ~GeoIndex();
  GeoIndex(const GeoIndex&) = delete;
  GeoIndex& operator=(const GeoIndex&) = delete;

  // Sets `key`'s point, replacing any earlier one (a move). bad_request for
  // an invalid position (CheckPosition); the index is then unchanged.
  Status Upsert(std::string_view key, double lat, double lon) SKIFF_EXCLUDES(mu_);

  // Removes `key`'s point; false when it had none.
  bool Remove(std::string_view key) SKIFF_EXCLUDES(mu_);

  // Replaces the whole index with `entries` (a rebuild at start; much faster
  // than one Upsert each, and the tree comes out tighter). A key given twice
  // keeps its last position. bad_request naming the first invalid entry, and
  // the index is then unchanged.
  Status Reset(const std::vector<GeoEntry>& entries) SKIFF_EXCLUDES(mu_);

  // Removes every point whose key `which` accepts, then places `entries`
  // (keys `which` should accept): a subset of the index read again from
  // its source, the rest untouched. bad_request naming the first invalid
  // entry, and the index is then unchanged. Not atomic: a query meanwhile
  // may see the subset half replaced, so callers keep queries off it (a
  // filter) until this returns.
  Status ReplaceWhere(const KeyFilter& which, const std::vector<GeoEntry>& entries)
      SKIFF_EXCLUDES(mu_);

  // The nearest points, ordered as the header says, into `*out` (replacing
  // its contents; its capacity is reused). bad_request when CheckQuery
  // refuses the query, and `*out` is then left alone. May start a due pack,
  // which changes no answer. With `keep`, only keys it accepts are
  // answered, and the answer is exact among those.
  Status Nearest(const GeoQuery& query, std::vector<GeoHit>* out, const KeyFilter* keep = nullptr)
      SKIFF_EXCLUDES(mu_);

  // `key`'s point as given, or nullopt.
  std::optional<GeoPosition> Find(std::string_view key) const SKIFF_EXCLUDES(mu_);

  size_t size() const SKIFF_EXCLUDES(mu_);
  GeoIndexStats Stats() const SKIFF_EXCLUDES(mu_);

  // Returns once the pack started by a write or query that returned before
  // this call, if any, is over (swapped in or dropped). A pack started by a
  // call still under way on another thread may begin after it returns.
  void AwaitRepack() SKIFF_EXCLUDES(thread_mu_);

 private:
  struct LoggedWrite {
    std::string key;
    std::optional<GeoPosition> position;  // nullopt: removed
  };

  // After a write: logs it for the pack in progress, if any; counts it;
  // whether a pack is due now (which it then marks started); and, when a
  // pack is over, its log dropped and the mark cleared.
  void Log(std::string_view key, std::optional<GeoPosition> position) SKIFF_REQUIRES(mu_);
  bool CountChange() SKIFF_REQUIRES(mu_);
  bool StartPackIfDue() SKIFF_REQUIRES(mu_);
  void EndRepack() SKIFF_REQUIRES(mu_);
  // Whether enough changes came for a pack, with no pack under way.
  bool EnoughChanges() const SKIFF_REQUIRES_SHARED(mu_);
  void StartRepack() SKIFF_EXCLUDES(mu_, thread_mu_);
  // The packing thread's body.
  void Repack() SKIFF_EXCLUDES(mu_);

  const RepackPolicy policy_;
  // Held to start or join the packing thread; taken before mu_.
  Mutex thread_mu_ SKIFF_ACQUIRED_BEFORE(mu_);
  mutable internal::WriterFirstMutex mu_;
  // The points. The pointer is swapped by packs and Resets; what it points
  // to is read under the read lock and written under the write lock.
  std::unique_ptr<internal::PointIndex> impl_ SKIFF_GUARDED_BY(mu_) SKIFF_PT_GUARDED_BY(mu_);
  size_t changes_ SKIFF_GUARDED_BY(mu_) = 0;  // since the last pack
  bool repacking_ SKIFF_GUARDED_BY(mu_) = false;
  uint64_t generation_ SKIFF_GUARDED_BY(mu_) = 0;       // bumped by Reset
  uint64_t pack_generation_ SKIFF_GUARDED_BY(mu_) = 0;  // generation_ at the pack's start
  uint64_t repacks_ SKIFF_GUARDED_BY(mu_) = 0;
  std::vector<LoggedWrite> log_ SKIFF_GUARDED_BY(mu_);  // writes during a pack
  // A query came since the last pack started (set by queries under the read
  // lock, hence atomic; cleared under the write lock when a pack starts).
  std::atomic<bool> queried_{false};
  std::thread packer_ SKIFF_GUARDED_BY(thread_mu_);
};

}  // namespace skiff::geo

#endif  // SKIFF_GEO_GEO_INDEX_H_
