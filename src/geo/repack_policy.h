// RepackPolicy: when a GeoIndex (geo/geo_index.h) packs itself again.
//
// A tree grown point by point answers about a quarter slower than one packed
// in a single pass, and its keys lie in memory in the order they came, not
// in space. So once the points placed, moved or removed since the last pack
// reach a quarter of the index (and at least min_changes), the index packs
// itself again on a thread of its own (geo_index.h says how).
//
// A pack pays off in the queries after it, so it waits for one: a due pack
// starts at the write that makes it due if a query came since the last pack
// started, else at the next query, or, with no query, once the writes since
// the last pack number as many as the points or the slots freed by removals
// reach a quarter of them (which bounds the memory a long run of writes
// wastes). A bulk load with no query among its inserts packs once, at
// min_changes points, and never again (the changes since a pack stay fewer
// than the points), where it used to pack at every quarter of growth (about
// 2 us an insert while 100,000 went in); the first query after it starts one
// pack of everything.
//
// A value the index copies at construction; its decisions are pure
// functions of what the index passes in. Thread-compatible.
#ifndef SKIFF_GEO_REPACK_POLICY_H_
#define SKIFF_GEO_REPACK_POLICY_H_

#include <algorithm>
#include <cstddef>
#include <functional>

namespace skiff::geo {

struct RepackPolicy {
  // Fewer changes than this never start a pack, however small the index.
  size_t min_changes = 4096;
  // Called on the packing thread with no lock held: before the points are
  // copied, and after that, before the new tree is built (tests make writes
  // and Resets there, to see them replayed or winning). Neither may call
  // GeoIndex::AwaitRepack (the thread would wait for itself).
  std::function<void()> before_copy;
  std::function<void()> after_copy;

  // A quarter of `points`, at least min_changes.
  size_t QuarterOf(size_t points) const { return std::max(min_changes, points / 4); }

  // Whether `changes` since the last pack are enough for one, should a query
  // want it.
  bool EnoughChanges(size_t changes, size_t points) const { return changes >= QuarterOf(points); }

  // Whether a pack is due now. With no query since the last pack started,
  // enough changes are not enough: only once they number as many as the
  // points, or the slots freed by removals (which only a pack gives back)
  // reach a quarter of them. That bounds what a long run of writes thins out
  // of the packed tree and piles into the grown one (moves alone, never
  // packed, reached 128 bytes a point), at one pack per index's worth of
  // writes.
  bool Due(size_t changes, size_t points, size_t free_slots, bool queried) const {
    if (!EnoughChanges(changes, points)) return false;
    return queried || changes >= std::max(min_changes, points) || free_slots >= QuarterOf(points);
  }
};

}  // namespace skiff::geo

#endif  // SKIFF_GEO_REPACK_POLICY_H_
