// Boost 1.74's geometry headers still include one of Boost's deprecated
// headers, which prints a note in every build otherwise.
#ifndef BOOST_ALLOW_DEPRECATED_HEADERS
#define BOOST_ALLOW_DEPRECATED_HEADERS
#endif

#include "server/internal/geo_index.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <mutex>
#include <new>
#include <shared_mutex>
#include <system_error>
#include <utility>

#include <boost/geometry.hpp>
#include <boost/geometry/index/rtree.hpp>
#include <boost/iterator/function_output_iterator.hpp>
#include <boost/sort/pdqsort/pdqsort.hpp>

#include "server/internal/counting_allocator.h"
#include "server/internal/geo_key_table.h"

namespace skiff::server::internal {
namespace {

namespace bg = boost::geometry;
namespace bgi = boost::geometry::index;

using Vec3 = bg::model::point<double, 3, bg::cs::cartesian>;
using Box3 = bg::model::box<Vec3>;
using Value = std::pair<Vec3, uint32_t>;  // a point and the id of its key

constexpr double kPi = 3.14159265358979323846;
constexpr double kRadiansPerDegree = kPi / 180;
constexpr double kRadius = GeoIndex::kEarthRadiusM;
constexpr double kInf = std::numeric_limits<double>::infinity();
// Added around every computed bounding box: unit-vector coordinates carry
// errors near 1e-16, so rounding in a bound can never drop a point that the
// exact tests below accept.
constexpr double kSlack = 1e-12;
// Nodes of up to 32 entries, sized per node. The static variant gives every
// node the size of an inner node (~950 bytes at 16 entries): 97 bytes per
// point on 100,000 inserted points, against 63 for dynamic nodes of 16 and
// 51 for dynamic nodes of 32, which also took fewer instructions per
// 500-nearest query (moves cost ~25% more than at 16).
const bgi::dynamic_quadratic kTreeParameters(32);

Vec3 UnitVector(double lat, double lon) {
  // Each pole is one point, whatever longitude it was given with.
  if (lat == 90 || lat == -90) return Vec3(0, 0, lat > 0 ? 1 : -1);
  const double phi = lat * kRadiansPerDegree;
  const double lambda = lon * kRadiansPerDegree;
  const double c = std::cos(phi);
  return Vec3(c * std::cos(lambda), c * std::sin(lambda), std::sin(phi));
}

double Chord2(const Vec3& a, const Vec3& b) {
  const double dx = a.get<0>() - b.get<0>();
  const double dy = a.get<1>() - b.get<1>();
  const double dz = a.get<2>() - b.get<2>();
  return dx * dx + dy * dy + dz * dz;
}

// Great-circle metres of a squared chord: 2R asin(chord / 2). Below
// chord/2 = 1e-3 (about 12.7 km) three terms of the asin series are exact to
// double precision and cost a fraction of asin. The result is accurate to
// well under a micrometre at short range and to about 0.1 m next to the
// antipode, where any formula from coordinates is ill-conditioned.
double ChordToMetres(double d2) {
  const double x = std::sqrt(d2) / 2;
  if (x < 1e-3) {
    const double x2 = x * x;
    return 2 * kRadius * x * (1 + x2 * (1.0 / 6 + x2 * (3.0 / 40)));
  }
  return 2 * kRadius * std::asin(std::min(1.0, x));
}

// Whole micrometres of a squared chord, rounded to nearest. Never more than
// half the circumference, about 2.0e13 (asin's argument is clamped, so an
// infinite chord gives that too), which an int64 holds.
int64_t ChordToMicrometres(double d2) { return int64_t(ChordToMetres(d2) * 1e6 + 0.5); }

// The squared chord of a great-circle distance; kInf when it spans the sphere.
double MetresToChord2(double metres) {
  const double theta = metres / kRadius;
  if (theta >= kPi) return kInf;
  const double chord = 2 * std::sin(theta / 2);
  return chord * chord;
}

Box3 WholeSphere() {
  const double e = 1 + kSlack;
  return Box3(Vec3(-e, -e, -e), Vec3(e, e, e));
}

Box3 Intersection(const Box3& a, const Box3& b) {
  const Vec3& al = a.min_corner();
  const Vec3& ah = a.max_corner();
  const Vec3& bl = b.min_corner();
  const Vec3& bh = b.max_corner();
  // An empty intersection comes out with min > max, which no point is in.
  return Box3(Vec3(std::max(al.get<0>(), bl.get<0>()), std::max(al.get<1>(), bl.get<1>()),
                   std::max(al.get<2>(), bl.get<2>())),
              Vec3(std::min(ah.get<0>(), bh.get<0>()), std::min(ah.get<1>(), bh.get<1>()),
                   std::min(ah.get<2>(), bh.get<2>())));
}

// The points a query may return, as exact tests on unit vectors (within the
// radius, inside the latitude/longitude box), and 3-D boxes bounding them for
// the R-tree to prune with.
class SearchRegion {
 public:
  explicit SearchRegion(const GeoQuery& query)
      : centre_(UnitVector(query.lat, query.lon)), bounds_(WholeSphere()) {
    if (query.radius_m) {
      // The radius holds the points whose reported distance (rounded to the
      // micrometre) is within it, which Impl::Nearest checks last. The chord
      // test only prunes, a metre wide of the radius: a distance computed
      // from a chord is good to well under a micrometre, but only to about
      // 0.1 m next to the antipode.
      radius_m_ = *query.radius_m;
      radius2_ = MetresToChord2(radius_m_ + 1.0);
    }
    reach2_ = radius2_;
    if (query.box_w_m) SetBox(query.lat, query.lon, *query.box_w_m, *query.box_h_m);
  }

  const Vec3& centre() const { return centre_; }
  double radius_m() const { return radius_m_; }
  // No point of the region is farther from the centre (squared chord;
  // kInf when the region is not bounded).
  double reach2() const { return reach2_; }

  // Whether `p`, at squared chord `d2` from the centre, is in the region.
  bool Contains(const Vec3& p, double d2) const {
    if (d2 > radius2_) return false;
    if (!has_box_) return true;
    const double z = p.get<2>();
    if (z < zlo_ || z > zhi_) return false;
    if (all_longitudes_) return true;
    // Within half_width of the centre's longitude: the angle between the
    // point's horizontal direction and the centre's has cosine >= cos(half).
    // A pole (x = y = 0) passes, as it should: it lies on every meridian.
    const double x = p.get<0>();
    const double y = p.get<1>();
    return x * cos_lon_ + y * sin_lon_ >= std::sqrt(x * x + y * y) * cos_half_width_;
  }

  // A 3-D box holding every region point within squared chord `r2` of the
  // centre: the bounds of that spherical cap, cut by the box's bounds.
  Box3 Bounds(double r2) const {
    if (r2 >= 4) return bounds_;
    const double theta = 2 * std::asin(std::sqrt(r2) / 2);
    double lo[3];
    double hi[3];
    const double c[3] = {centre_.get<0>(), centre_.get<1>(), centre_.get<2>()};
    for (int i = 0; i < 3; ++i) {
      // The angle between a cap point and axis i lies within theta of the
      // centre's angle to that axis.
      const double alpha = std::acos(std::clamp(c[i], -1.0, 1.0));
      hi[i] = std::cos(std::max(0.0, alpha - theta)) + kSlack;
      lo[i] = std::cos(std::min(kPi, alpha + theta)) - kSlack;
    }
    return Intersection(bounds_, Box3(Vec3(lo[0], lo[1], lo[2]), Vec3(hi[0], hi[1], hi[2])));
  }

 private:
  void SetBox(double lat, double lon, double width_m, double height_m) {
    has_box_ = true;
    const double phi = lat * kRadiansPerDegree;
    const double half_height = (height_m / 2) / kRadius;
    const double south = std::max(-kPi / 2, phi - half_height);
    const double north = std::min(kPi / 2, phi + half_height);
    zlo_ = south <= -kPi / 2 ? -1 : std::sin(south);
    zhi_ = north >= kPi / 2 ? 1 : std::sin(north);
    // Half the width along the centre's parallel, as an angle of longitude.
    const double parallel = kRadius * std::cos(phi);
    const double half_width_m = width_m / 2;
    all_longitudes_ = lat == 90 || lat == -90 || half_width_m >= parallel * kPi;
    const double half_width = all_longitudes_ ? kPi : half_width_m / parallel;
    const double lambda = lon * kRadiansPerDegree;
    cos_lon_ = std::cos(lambda);
    sin_lon_ = std::sin(lambda);
    cos_half_width_ = std::cos(half_width);

    // Bounds: z from the latitudes; x = rho cos(lambda), y = rho sin(lambda)
    // with rho = cos(latitude) >= 0 over the longitudes spanned.
    const double rho_lo = std::max(0.0, std::min(std::cos(south), std::cos(north)));
    const double rho_hi = south <= 0 && north >= 0 ? 1 : std::max(std::cos(south), std::cos(north));
    double cos_lo = -1, cos_hi = 1, sin_lo = -1, sin_hi = 1;
    if (!all_longitudes_) {
      const double west = lambda - half_width;
      const double east = lambda + half_width;
      auto spans = [&](double angle) {
        return std::abs(std::remainder(angle - lambda, 2 * kPi)) <= half_width;
      };
      cos_lo = spans(kPi) ? -1 : std::min(std::cos(west), std::cos(east));
      cos_hi = spans(0) ? 1 : std::max(std::cos(west), std::cos(east));
      sin_lo = spans(-kPi / 2) ? -1 : std::min(std::sin(west), std::sin(east));
      sin_hi = spans(kPi / 2) ? 1 : std::max(std::sin(west), std::sin(east));
    }
    auto low = [&](double t) { return (t >= 0 ? rho_lo : rho_hi) * t - kSlack; };
    auto high = [&](double t) { return (t >= 0 ? rho_hi : rho_lo) * t + kSlack; };
    bounds_ = Box3(Vec3(low(cos_lo), low(sin_lo), zlo_ - kSlack),
                   Vec3(high(cos_hi), high(sin_hi), zhi_ + kSlack));
    // The farthest corner of the bounds is at least as far as any point.
    double far2 = 0;
    for (int corner = 0; corner < 8; ++corner) {
      const Vec3& x = corner & 1 ? bounds_.max_corner() : bounds_.min_corner();
      const Vec3& y = corner & 2 ? bounds_.max_corner() : bounds_.min_corner();
      const Vec3& z = corner & 4 ? bounds_.max_corner() : bounds_.min_corner();
      far2 = std::max(far2, Chord2(Vec3(x.get<0>(), y.get<1>(), z.get<2>()), centre_));
    }
    reach2_ = std::min(reach2_, far2);
  }

  Vec3 centre_;
  Box3 bounds_;
  double radius_m_ = kInf;
  double radius2_ = kInf;
  double reach2_ = kInf;
  bool has_box_ = false;
  bool all_longitudes_ = true;
  double zlo_ = -1;
  double zhi_ = 1;
  double cos_lon_ = 1;
  double sin_lon_ = 0;
  double cos_half_width_ = -1;
};

// A point found by a query: its distance in whole micrometres (the order
// the answer is in; see the header) and its slot.
struct Candidate {
  int64_t um;
  uint32_t id;
};

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

// Keys live once, in slots_ (a slot id stands for its key everywhere else);
// the key table maps a key to its slot id; the R-tree holds (vector, id).
// Every container allocates through count_, so Stats() is exact.
class GeoIndex::Impl {
 public:
  Impl()
      : slots_(Alloc<Slot>()),
        free_(Alloc<uint32_t>()),
        table_(KeyOf{&slots_}, Alloc<uint32_t>()),
        packed_(kTreeParameters, bgi::indexable<Value>(), bgi::equal_to<Value>(), Alloc<Value>()),
        grown_(kTreeParameters, bgi::indexable<Value>(), bgi::equal_to<Value>(), Alloc<Value>()) {}
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  // False when the key was there already, at that very position.
  bool Upsert(std::string_view key, double lat, double lon) {
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

  bool Remove(std::string_view key) {
    const uint32_t id = table_.Find(key);
    if (id == Table::kNone) return false;
    Slot& slot = slots_[id];
    RemoveFromTree(id);
    table_.Erase(id);
    Key(Alloc<char>()).swap(slot.key);  // frees a long key's buffer now
    free_.push_back(id);
    return true;
  }

  // Fills an empty Impl with `entries` and packs the tree in one pass, with
  // the slots in space order: the keys of an answer's points then lie close
  // together in memory, not one cache miss each (on the benchmark's 100,000
  // points, 500-nearest took 72-80 us grown point by point, 51-64 packed,
  // 50-54 packed with the slots in space order).
  void Load(const std::vector<GeoEntry>& entries) {
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

  // Every point, for a pack.
  std::vector<GeoEntry> Entries() const {
    std::vector<bool> is_free(slots_.size());
    for (const uint32_t id : free_) is_free[id] = true;
    std::vector<GeoEntry> out;
    out.reserve(table_.size());
    for (uint32_t id = 0; id < slots_.size(); ++id) {
      if (!is_free[id])
        out.push_back({std::string(slots_[id].key), slots_[id].lat, slots_[id].lon});
    }
    return out;
  }

  void Nearest(const SearchRegion& region, size_t limit, std::vector<GeoHit>* out) const {
    out->clear();
    if (table_.size() == 0) return;
    std::vector<Candidate> found = Collect(region, limit);
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
  void SelectNearest(std::vector<Candidate>& found, size_t limit) const {
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

  std::optional<GeoPosition> Find(std::string_view key) const {
    const uint32_t id = table_.Find(key);
    if (id == Table::kNone) return std::nullopt;
    return GeoPosition{slots_[id].lat, slots_[id].lon};
  }

  size_t size() const { return table_.size(); }
  // Slots emptied by removals and not reused yet; a pack gives them back.
  size_t free_slots() const { return free_.size(); }

  GeoIndexStats Stats() const {
    return GeoIndexStats{table_.size(), count_.bytes.load(std::memory_order_relaxed),
                         count_.allocations.load(std::memory_order_relaxed)};
  }

 private:
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
  using Table = GeoKeyTable<KeyOf, CountingAllocator<uint32_t>>;
  using Tree = bgi::rtree<Value, bgi::dynamic_quadratic, bgi::indexable<Value>,
                          bgi::equal_to<Value>, CountingAllocator<Value>>;

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
  void RemoveFromTree(uint32_t id) {
    const Value v(UnitVector(slots_[id].lat, slots_[id].lon), id);
    if (grown_.remove(v) == 1) return;
    SKIFF_CHECK(packed_.remove(v) == 1);
  }

  uint32_t NewSlot(std::string_view key, double lat, double lon) {
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
  std::vector<Candidate> Collect(const SearchRegion& region, size_t limit) const {
    const Vec3& centre = region.centre();
    const double reach2 = region.reach2();
    auto in_region = [&](const Value& v) {
      return region.Contains(v.first, Chord2(v.first, centre));
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
      auto keep = [&](const Value& v) {
        const double d2 = Chord2(v.first, centre);
        if (d2 <= bound && region.Contains(v.first, d2)) {
          const int64_t um = ChordToMicrometres(d2);
          settled += um < edge_um ? 1 : 0;
          found.push_back({um, v.second});
        }
      };
      packed_.query(bgi::intersects(box), boost::make_function_output_iterator(keep));
      if (!grown_.empty()) {
        grown_.query(bgi::intersects(box), boost::make_function_output_iterator(keep));
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

GeoIndex::GeoIndex(RepackPolicy policy)
    : policy_(std::move(policy)), impl_(std::make_unique<Impl>()) {}
GeoIndex::~GeoIndex() { AwaitRepack(); }

Status GeoIndex::CheckPosition(double lat, double lon) {
  if (!std::isfinite(lat) || lat < -90 || lat > 90) {
    return BadRequest("lat must be a number from -90 to 90");
  }
  if (!std::isfinite(lon) || lon < -180 || lon > 180) {
    return BadRequest("lon must be a number from -180 to 180");
  }
  return Status::Ok();
}

Status GeoIndex::CheckQuery(const GeoQuery& query) {
  SKIFF_RETURN_IF_ERROR(CheckPosition(query.lat, query.lon));
  if (query.limit < 1 || query.limit > kMaxLimit) {
    return BadRequest("limit must be from 1 to " + std::to_string(kMaxLimit));
  }
  auto positive = [](double m) { return std::isfinite(m) && m > 0; };
  if (query.radius_m && !positive(*query.radius_m)) {
    return BadRequest("radius_m must be a positive number of metres");
  }
  if (query.box_w_m.has_value() != query.box_h_m.has_value()) {
    return BadRequest("box_m needs a width and a height");
  }
  if (query.box_w_m && !(positive(*query.box_w_m) && positive(*query.box_h_m))) {
    return BadRequest("box_m sides must be positive numbers of metres");
  }
  return Status::Ok();
}

Status GeoIndex::Upsert(std::string_view key, double lat, double lon) {
  SKIFF_RETURN_IF_ERROR(CheckPosition(lat, lon));
  bool pack = false;
  {
    std::unique_lock lock(mu_);
    if (!impl_->Upsert(key, lat, lon)) return Status::Ok();
    Log(key, GeoPosition{lat, lon});
    pack = CountChange();
  }
  if (pack) StartRepack();
  return Status::Ok();
}

bool GeoIndex::Remove(std::string_view key) {
  bool pack = false;
  {
    std::unique_lock lock(mu_);
    if (!impl_->Remove(key)) return false;
    Log(key, std::nullopt);
    pack = CountChange();
  }
  if (pack) StartRepack();
  return true;
}

void GeoIndex::Log(std::string_view key, std::optional<GeoPosition> position) {
  if (!repacking_) return;
  try {
    log_.push_back({std::string(key), position});
  } catch (const std::bad_alloc&) {
    // The write is in the index but cannot be replayed: the pack's tree
    // would miss it, so the pack is dropped.
    ++generation_;
  }
}

bool GeoIndex::CountChange() {
  ++changes_;
  return StartPackIfDue();
}

size_t GeoIndex::QuarterOfPoints() const {
  return std::max(policy_.min_changes, impl_->size() / 4);
}

bool GeoIndex::EnoughChanges() const { return !repacking_ && changes_ >= QuarterOfPoints(); }

bool GeoIndex::StartPackIfDue() {
  if (!EnoughChanges()) return false;
  // With no query since the last pack, a pack is due only once the changes
  // number as many as the points, or the slots freed by removals (which
  // only a pack gives back) reach a quarter of them: that bounds what a
  // long run of writes thins out of the packed tree and piles into the
  // grown one (moves alone, never packed, reached 128 bytes a point), at
  // one pack per index's worth of writes.
  if (!queried_.load(std::memory_order_relaxed) &&
      changes_ < std::max(policy_.min_changes, impl_->size()) &&
      impl_->free_slots() < QuarterOfPoints()) {
    return false;
  }
  repacking_ = true;
  pack_generation_ = generation_;
  queried_.store(false, std::memory_order_relaxed);
  return true;
}

void GeoIndex::EndRepack() {
  std::vector<LoggedWrite>().swap(log_);
  repacking_ = false;
}

void GeoIndex::StartRepack() {
  MutexLock lock(&thread_mu_);
  // A finished pack's thread may still be freeing the tree it replaced.
  if (packer_.joinable()) packer_.join();
  try {
    packer_ = std::thread([this] { Repack(); });
  } catch (...) {
    // No thread to be had (std::system_error, or bad_alloc for its state):
    // no pack this time; the next due one tries again.
    std::unique_lock index_lock(mu_);
    changes_ = 0;
    EndRepack();
  }
}

void GeoIndex::Repack() {
  if (policy_.before_copy) policy_.before_copy();
  // The pack holds while generation_ stays what it was when the pack was
  // started: a Reset, or a write that could not be logged, bumps it, and the
  // pack's tree is then dropped (the writes logged before a Reset belong to
  // the index it replaced).
  std::unique_ptr<Impl> fresh;
  uint64_t generation = 0;
  try {
    std::vector<GeoEntry> entries;
    {
      std::shared_lock lock(mu_);
      generation = pack_generation_;
      if (generation == generation_) entries = impl_->Entries();
    }
    if (policy_.after_copy) policy_.after_copy();
    fresh = std::make_unique<Impl>();
    fresh->Load(entries);
  } catch (const std::bad_alloc&) {
    fresh.reset();  // the grown tree stays; the next due pack tries again
  }
  std::unique_lock lock(mu_);
  // A dropped pack waits for another quarter of changes before the next
  // (after a Reset the index is packed already; after a failed allocation
  // a retry on the very next write would only fail again).
  changes_ = 0;
  if (fresh != nullptr && generation == generation_) {
    try {
      // Writes made since the pack started (some may be in the copy
      // already; replaying those changes nothing).
      for (const LoggedWrite& w : log_) {
        if (w.position) {
          fresh->Upsert(w.key, w.position->lat, w.position->lon);
        } else {
          fresh->Remove(w.key);
        }
      }
      impl_.swap(fresh);
      ++repacks_;
      changes_ = log_.size();  // replayed into the new tree one by one
    } catch (const std::bad_alloc&) {
      // The index in use is untouched; the pack is dropped.
    }
  }
  EndRepack();
  lock.unlock();
  fresh.reset();  // the replaced tree (or the dropped one), freed outside the lock
}

void GeoIndex::AwaitRepack() {
  MutexLock lock(&thread_mu_);
  if (packer_.joinable()) packer_.join();
}

Status GeoIndex::Reset(const std::vector<GeoEntry>& entries) {
  for (const GeoEntry& e : entries) {
    if (Status s = CheckPosition(e.lat, e.lon); !s.ok()) {
      return BadRequest("key '" + e.key + "': " + s.message());
    }
  }
  auto fresh = std::make_unique<Impl>();
  fresh->Load(entries);
  {
    std::unique_lock lock(mu_);
    impl_.swap(fresh);
    changes_ = 0;
    ++generation_;  // a pack in progress started on the index replaced here
    log_.clear();
  }
  return Status::Ok();  // the old index is freed here, outside the lock
}

Status GeoIndex::Nearest(const GeoQuery& query, std::vector<GeoHit>* out) {
  SKIFF_RETURN_IF_ERROR(CheckQuery(query));
  const SearchRegion region(query);
  bool due = false;
  {
    std::shared_lock lock(mu_);
    impl_->Nearest(region, query.limit, out);
    // Stored only when it changes: queries on every thread would otherwise
    // write the same cache line each time.
    if (!queried_.load(std::memory_order_relaxed)) queried_.store(true, std::memory_order_relaxed);
    due = EnoughChanges();
  }
  if (due) {
    // Writes came and no query since: this query starts the pack, unless
    // another call got there first, or the lock is busy: a query does not
    // wait for the write lock (queries behind it would wait too); the next
    // query or write tries again.
    bool pack = false;
    {
      std::unique_lock lock(mu_, std::try_to_lock);
      pack = lock.owns_lock() && StartPackIfDue();
    }
    if (pack) StartRepack();
  }
  return Status::Ok();
}

std::optional<GeoPosition> GeoIndex::Find(std::string_view key) const {
  std::shared_lock lock(mu_);
  return impl_->Find(key);
}

size_t GeoIndex::size() const {
  std::shared_lock lock(mu_);
  return impl_->size();
}

GeoIndexStats GeoIndex::Stats() const {
  std::shared_lock lock(mu_);
  GeoIndexStats stats = impl_->Stats();
  stats.repacks = repacks_;
  return stats;
}

}  // namespace skiff::server::internal
