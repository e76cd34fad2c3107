#include "geo/internal/point_index.h"

#include <algorithm>
#include <iterator>

#include <boost/geometry.hpp>
#include <boost/iterator/function_output_iterator.hpp>
#include <boost/sort/pdqsort/pdqsort.hpp>

#include "base/check.h"

namespace skiff::geo::internal {
namespace {

namespace bgi = boost::geometry::index;

// Nodes of up to 32 entries, sized per node. The static variant gives every
// node the size of an inner node (~950 bytes at 16 entries): 97 bytes per
// point on 100,000 inserted points, against 63 for dynamic nodes of 16 and
// 51 for dynamic nodes of 32, which also took fewer instructions per
// 500-nearest query (moves cost ~25% more than at 16).
const bgi::dynamic_quadratic kTreeParameters(32);

// The 21 low bits of v, each moved to bit 3i.
uint64_t SpreadBits(uint64_t v) {
  v &= 0x1fffff;
  v = (v | v << 32) & 0x1f00000000ffff;
  v = (v | v << 16) & 0x1f0000ff0000ff;
  v = (v | v << 8) & 0x100f00f00f00f00f;
  v = (v | v << 4) & 0x10c30c30c30c30c3;
  v = (v | v << 2) & 0x1249249249249249;
  return v;
}

// A point's place on a Z-order (Morton) curve through the cube around the
// sphere, 21 bits per axis: points close in this order are close in space.
uint64_t MortonCode(const Vec3& v) {
  auto cell = [](double t) { return uint64_t(std::clamp((t + 1) / 2, 0.0, 1.0) * 0x1fffff); };
  return SpreadBits(cell(v.get<0>())) | SpreadBits(cell(v.get<1>())) << 1 |
         SpreadBits(cell(v.get<2>())) << 2;
}

}  // namespace

PointIndex::PointIndex()
    : slots_(Alloc<Slot>()),
      free_(Alloc<uint32_t>()),
      table_(KeyOf{&slots_}, Alloc<uint32_t>()),
      packed_(kTreeParameters, bgi::indexable<Value>(), bgi::equal_to<Value>(), Alloc<Value>()),
      grown_(kTreeParameters, bgi::indexable<Value>(), bgi::equal_to<Value>(), Alloc<Value>()) {}

bool PointIndex::Upsert(std::string_view key, double lat, double lon) {
  const Vec3 v = UnitVector(lat, lon);
  uint32_t id = table_.Find(key);
  if (id != Table::kNone) {
    Slot& slot = slots_[id];
    if (slot.lat == lat && slot.lon == lon) return false;
    RemoveFromTree(id);
    slot.lat = lat;
    slot.lon = lon;
    grown_.insert(Value(v, id));
    return true;
  }
  id = NewSlot(key, lat, lon);
  table_.Insert(id);
  grown_.insert(Value(v, id));
  return true;
}

bool PointIndex::Remove(std::string_view key) {
  const uint32_t id = table_.Find(key);
  if (id == Table::kNone) return false;
  Slot& slot = slots_[id];
  RemoveFromTree(id);
  table_.Erase(id);
  Key(Alloc<char>()).swap(slot.key);  // frees a long key's buffer now
  free_.push_back(id);
  return true;
}

// The slots go in space order: the keys of an answer's points then lie close
// together in memory, not one cache miss each (on the benchmark's 100,000
// points, 500-nearest took 72-80 us grown point by point, 51-64 packed,
// 50-54 packed with the slots in space order).
void PointIndex::Load(const std::vector<GeoEntry>& entries) {
  slots_.reserve(entries.size());
  table_.Reserve(entries.size());
  for (const GeoEntry& e : entries) {
    const uint32_t id = table_.Find(e.key);
    if (id == Table::kNone) {
      table_.Insert(NewSlot(e.key, e.lat, e.lon));
    } else {
      slots_[id].lat = e.lat;
      slots_[id].lon = e.lon;
    }
  }
  std::vector<Vec3> vectors;
  std::vector<std::pair<uint64_t, uint32_t>> order;  // (Morton code, id)
  vectors.reserve(slots_.size());
  order.reserve(slots_.size());
  for (uint32_t id = 0; id < slots_.size(); ++id) {
    vectors.push_back(UnitVector(slots_[id].lat, slots_[id].lon));
    order.emplace_back(MortonCode(vectors.back()), id);
  }
  std::sort(order.begin(), order.end());
  Vector<Slot> placed(Alloc<Slot>());
  placed.reserve(slots_.size());
  std::vector<Value> values;
  values.reserve(slots_.size());
  for (const auto& [code, id] : order) {
    values.emplace_back(vectors[id], uint32_t(placed.size()));
    placed.push_back(std::move(slots_[id]));
  }
  slots_.swap(placed);
  table_.Clear();
  table_.Reserve(slots_.size());
  for (uint32_t id = 0; id < slots_.size(); ++id) table_.Insert(id);
  Tree packed(values.begin(), values.end(), kTreeParameters, bgi::indexable<Value>(),
              bgi::equal_to<Value>(), Alloc<Value>());
  packed_.swap(packed);
}

std::vector<GeoEntry> PointIndex::Entries() const {
  std::vector<bool> is_free(slots_.size());
  for (const uint32_t id : free_) is_free[id] = true;
  std::vector<GeoEntry> out;
  out.reserve(table_.size());
  for (uint32_t id = 0; id < slots_.size(); ++id) {
    if (!is_free[id]) out.push_back({std::string(slots_[id].key), slots_[id].lat, slots_[id].lon});
  }
  return out;
}

void PointIndex::Nearest(const SearchRegion& region, size_t limit, std::vector<GeoHit>* out,
                         const KeyFilter* keep) const {
  out->clear();
  if (table_.size() == 0) return;
  std::vector<Candidate> found = Collect(region, limit, keep);
  SelectNearest(found, limit);
  // Slots placed since the last pack are in insertion order, not in
  // space, so each answer's slot may be a cache miss of its own, and
  // copying the keys waited on them one at a time (about 40 of a 100 us
  // query on 100,000 points, before the index packed itself). Loads asked for
  // kPrefetchAhead answers ahead overlap each other and the copy; asking
  // for all 500 at once, before the sort, won back a fifth as much.
  for (size_t i = 0; i < found.size() && i < kPrefetchAhead; ++i) {
    __builtin_prefetch(&slots_[found[i].id]);
  }
  out->resize(found.size());
  for (size_t i = 0; i < found.size(); ++i) {
    if (i + kPrefetchAhead < found.size()) {
      __builtin_prefetch(&slots_[found[i + kPrefetchAhead].id]);
    }
    (*out)[i].key.assign(slots_[found[i].id].key);
    (*out)[i].dist_um = found[i].um;
  }
  // The chord test let through points up to a metre past the radius;
  // those reported past it go (they sort last).
  while (!out->empty() && out->back().dist_m() > region.radius_m()) out->pop_back();
}

// Keeps the `limit` nearest of `found` in answer order: by distance,
// then key. Distances are compared alone (the sort is then branch-free,
// pdqsort_branchless), and keys only among equal distances, which are
// rare: at the cut, and in runs after the sort.
void PointIndex::SelectNearest(std::vector<Candidate>& found, size_t limit) const {
  auto closer = [](const Candidate& a, const Candidate& b) { return a.um < b.um; };
  auto by_key = [this](const Candidate& a, const Candidate& b) {
    return std::string_view(slots_[a.id].key) < std::string_view(slots_[b.id].key);
  };
  if (found.size() > limit) {
    const auto cut_at = found.begin() + std::ptrdiff_t(limit);
    std::nth_element(found.begin(), cut_at - 1, found.end(), closer);
    const int64_t cut = (cut_at - 1)->um;
    auto at_cut = [cut](const Candidate& c) { return c.um == cut; };
    const auto ties_end = std::partition(cut_at, found.end(), at_cut);
    if (ties_end != cut_at) {
      // Points at the cut's distance on both sides: the smallest keys stay.
      const auto ties_begin =
          std::partition(found.begin(), cut_at, [cut](const Candidate& c) { return c.um < cut; });
      std::sort(ties_begin, ties_end, by_key);
    }
    found.resize(limit);
  }
  boost::sort::pdqsort_branchless(found.begin(), found.end(), closer);
  for (auto run = found.begin(); run != found.end();) {
    auto next = run + 1;
    while (next != found.end() && next->um == run->um) ++next;
    if (next - run > 1) std::sort(run, next, by_key);
    run = next;
  }
}

std::optional<GeoPosition> PointIndex::Find(std::string_view key) const {
  const uint32_t id = table_.Find(key);
  if (id == Table::kNone) return std::nullopt;
  return GeoPosition{slots_[id].lat, slots_[id].lon};
}

GeoIndexStats PointIndex::Stats() const {
  return GeoIndexStats{table_.size(), count_.bytes.load(std::memory_order_relaxed),
                       count_.allocations.load(std::memory_order_relaxed)};
}

void PointIndex::RemoveFromTree(uint32_t id) {
  const Value v(UnitVector(slots_[id].lat, slots_[id].lon), id);
  if (grown_.remove(v) == 1) return;
  SKIFF_CHECK(packed_.remove(v) == 1);
}

uint32_t PointIndex::NewSlot(std::string_view key, double lat, double lon) {
  if (!free_.empty()) {
    const uint32_t id = free_.back();
    free_.pop_back();
    slots_[id].key.assign(key);
    slots_[id].lat = lat;
    slots_[id].lon = lon;
    return id;
  }
  SKIFF_CHECK(slots_.size() < Table::kNone);
  // Grow by an eighth instead of doubling: the slots are most of the
  // index's memory, and a doubled vector is up to half empty.
  if (slots_.size() == slots_.capacity()) {
    slots_.reserve(slots_.capacity() + slots_.capacity() / 8 + 64);
  }
  slots_.push_back(Slot{Key(key, Alloc<char>()), lat, lon});
  return uint32_t(slots_.size() - 1);
}

// Every region point within some radius of the centre, where at least
// `limit` of them are nearer than the radius's own micrometre (or the
// radius covers the whole region): the answer is then the nearest `limit`
// of these, ties at the micrometre included. A pilot k-nearest search
// guesses the radius; a guess that holds too few points is widened.
std::vector<PointIndex::Candidate> PointIndex::Collect(const SearchRegion& region, size_t limit,
                                                       const KeyFilter* keep) const {
  const Vec3& centre = region.centre();
  const double reach2 = region.reach2();
  // A filtered-out point is as if absent: the pilot's radius and the
  // settled count below see only the points the caller may be answered.
  auto kept = [&](const Value& v) { return keep == nullptr || (*keep)(slots_[v.second].key); };
  auto in_region = [&](const Value& v) {
    return region.Contains(v.first, Chord2(v.first, centre)) && kept(v);
  };
  double r2 = reach2;
  const size_t k = std::min(limit, kPilot);
  std::vector<Value> pilot;
  pilot.reserve(2 * k);
  for (const Tree* tree : {&packed_, &grown_}) {
    if (tree->empty()) continue;
    tree->query(bgi::nearest(centre, unsigned(k)) && bgi::intersects(region.Bounds(reach2)) &&
                    bgi::satisfies(in_region),
                std::back_inserter(pilot));
  }
  if (pilot.size() >= k) {
    // The k-th nearest of both trees' k nearest.
    std::vector<double> d2s;
    d2s.reserve(pilot.size());
    for (const Value& v : pilot) d2s.push_back(Chord2(v.first, centre));
    std::nth_element(d2s.begin(), d2s.begin() + std::ptrdiff_t(k - 1), d2s.end());
    const double dk2 = d2s[k - 1];
    // Points spread over an area: count grows with the squared radius.
    // When the pilot found the whole answer, its farthest point bounds it;
    // a few micrometres more keep that point nearer than the bound's own
    // micrometre (see `settled` below).
    r2 = std::min(reach2, k == limit ? MetresToChord2(ChordToMetres(dk2) + 1e-5)
                                     : dk2 * double(limit) / double(k) * kMargin2);
  }
  std::vector<Candidate> found;
  found.reserve(limit * 2 + 16);
  for (;;) {
    found.clear();
    const double bound = r2;
    const Box3 box = region.Bounds(bound);
    // Points left outside the bound are at least edge_um away, so they
    // can tie with none of the found points nearer than that: once
    // `limit` of those are found, the answer is among them and exact.
    const int64_t edge_um = ChordToMicrometres(bound);
    size_t settled = 0;
    auto take = [&](const Value& v) {
      const double d2 = Chord2(v.first, centre);
      if (d2 <= bound && region.Contains(v.first, d2) && kept(v)) {
        const int64_t um = ChordToMicrometres(d2);
        settled += um < edge_um ? 1 : 0;
        found.push_back({um, v.second});
      }
    };
    packed_.query(bgi::intersects(box), boost::make_function_output_iterator(take));
    if (!grown_.empty()) {
      grown_.query(bgi::intersects(box), boost::make_function_output_iterator(take));
    }
    // Done when enough were found, or nothing farther can be in the region
    // (a squared chord of 4 spans the sphere).
    if (settled >= limit || bound >= reach2 || bound >= 4) break;
    const double grow =
        found.empty() ? 16 : std::max(1.5, double(limit) / double(found.size()) * kMargin2);
    r2 = std::min(reach2, std::max(bound * grow, 1e-20));
  }
  return found;
}

}  // namespace skiff::geo::internal
