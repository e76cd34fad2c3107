// PointIndex: the points of one table, by key, in R-trees of unit vectors
// (Boost.Geometry), answering GeoIndex's queries exactly (geo/geo_index.h
// defines the answer's order).
//
// Keys live once, in slots (a slot id stands for its key everywhere else);
// a KeyTable maps a key to its slot id; the trees hold (vector, id). Points
// as of the last Load sit in a tree packed in one pass, in space order, and
// points placed since in a tree grown one insert at a time. Every container
// allocates through one AllocationCount, so Stats() is exact.
// Thread-compatible: GeoIndex serialises writers and readers with its lock.
#ifndef SKIFF_GEO_INTERNAL_POINT_INDEX_H_
#define SKIFF_GEO_INTERNAL_POINT_INDEX_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/geometry/index/rtree.hpp>

#include "geo/geo_index.h"
#include "geo/internal/counting_allocator.h"
#include "geo/internal/key_table.h"
#include "geo/internal/search_region.h"
#include "geo/internal/sphere.h"
#include "geo/query.h"

namespace skiff::geo::internal {

class PointIndex {
 public:
  PointIndex();
  PointIndex(const PointIndex&) = delete;
  PointIndex& operator=(const PointIndex&) = delete;

  // Sets `key`'s point (a valid position). False when the key was there
  // already, at that very position.
  bool Upsert(std::string_view key, double lat, double lon);

  // Removes `key`'s point; false when it had none.
  bool Remove(std::string_view key);

  // Fills an empty index with `entries` (a key given twice keeps its last
  // position) and packs the tree in one pass, with the slots in space order.
  void Load(const std::vector<GeoEntry>& entries);

  // Every point, for a pack.
  std::vector<GeoEntry> Entries() const;

  // The `limit` nearest points of `region`, in answer order, into `*out`
  // (replacing its contents).
  // With `keep`, only keys it accepts are candidates.
  void Nearest(const SearchRegion& region, size_t limit, std::vector<GeoHit>* out,
               const KeyFilter* keep = nullptr) const;

  std::optional<GeoPosition> Find(std::string_view key) const;

  size_t size() const { return table_.size(); }
  // Slots emptied by removals and not reused yet; a pack gives them back.
  size_t free_slots() const { return free_.size(); }

  // Points and the bytes held; `repacks` is left 0.
  GeoIndexStats Stats() const;

 private:
  using Value = std::pair<Vec3, uint32_t>;  // a point and the id of its key
  template <typename T>
  using Vector = std::vector<T, CountingAllocator<T>>;
  using Key = std::basic_string<char, std::char_traits<char>, CountingAllocator<char>>;
  struct Slot {
    Key key;
    double lat;
    double lon;
  };
  struct KeyOf {
    const Vector<Slot>* slots;
    std::string_view operator()(uint32_t id) const { return (*slots)[id].key; }
  };
  using Table = KeyTable<KeyOf, CountingAllocator<uint32_t>>;
  using Tree = boost::geometry::index::rtree<
      Value, boost::geometry::index::dynamic_quadratic, boost::geometry::index::indexable<Value>,
      boost::geometry::index::equal_to<Value>, CountingAllocator<Value>>;
  // A point found by a query: its distance in whole micrometres (the order
  // the answer is in) and its slot.
  struct Candidate {
    int64_t um;
    uint32_t id;
  };

  // The pilot search asks for this many nearest points first; the distance
  // of the last one, scaled to `limit` points, is where the full search
  // starts. Measured on 100,000 points: a 16-point pilot plus a 1.2x margin
  // on the radius needed a second round for about one query in six and cost
  // least overall.
  static constexpr size_t kPilot = 16;
  // How many answers ahead the copy of the keys asks for their slots.
  static constexpr size_t kPrefetchAhead = 16;
  static constexpr double kMargin2 = 1.2 * 1.2;

  template <typename T>
  CountingAllocator<T> Alloc() const {
    return CountingAllocator<T>(&count_);
  }

  // Takes `id`'s point out of whichever tree holds it.
  void RemoveFromTree(uint32_t id);
  uint32_t NewSlot(std::string_view key, double lat, double lon);
  std::vector<Candidate> Collect(const SearchRegion& region, size_t limit,
                                 const KeyFilter* keep) const;
  void SelectNearest(std::vector<Candidate>& found, size_t limit) const;

  mutable AllocationCount count_;  // declared first: the containers below count into it
  Vector<Slot> slots_;             // by id; a free id's slot has an empty key
  Vector<uint32_t> free_;          // ids to reuse
  Table table_;
  // Points as of the last pack, in a tree packed in one pass (Load), and
  // points placed since, in a tree grown one insert at a time. A packed
  // tree's nodes are full, so inserts into it would split most of its leaves
  // (a few percent more points undid the pack's gain and cost 30 more bytes
  // a point); removals from it only thin its nodes.
  Tree packed_;
  Tree grown_;
};

}  // namespace skiff::geo::internal

#endif  // SKIFF_GEO_INTERNAL_POINT_INDEX_H_
