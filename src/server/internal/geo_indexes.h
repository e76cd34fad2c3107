// GeoIndexes: the geo index of every table the catalog (geo_catalog.h)
// declares, kept in step with the table's documents.
//
// Load() reads the catalog and builds each index from the store once, before
// the server serves; the set of indexed tables is fixed after that, so
// finding a table's index takes no lock. Documents calls Follow() after each
// change of a document (under the key's shard lock) and FollowStored() when
// a write failed and the cached copy was dropped (also under it, with what
// the store held, read just before): an index
// then holds, for every key, the position of the document as the cache has
// it, or as the store has it after a failure. Memory tiers do not touch the
// index: a packed or evicted document keeps its point. Documents without a
// usable position are counted, per index, as unindexed.
// Thread-safe after Load(): a table's index has its own lock, taken after
// the caller's shard lock and never around a call out.
#ifndef SKIFF_SERVER_INTERNAL_GEO_INDEXES_H_
#define SKIFF_SERVER_INTERNAL_GEO_INDEXES_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "base/clock.h"
#include "base/mutex.h"
#include "base/status.h"
#include "geo/geo_index.h"
#include "geo/query.h"
#include "server/geo_catalog.h"
#include "server/internal/cached_document.h"
#include "store/store.h"

namespace skiff::server::internal {

struct GeoTableStats {
  std::string table;
  std::string reads;      // DescribeGeoSpec
  size_t points = 0;      // documents in the index
  size_t unindexed = 0;   // documents without a usable position
  int64_t bytes = 0;      // the index's own bytes
  double rebuild_ms = 0;  // wall time of the build at start
};

class GeoIndexes {
 public:
  GeoIndexes() = default;
  GeoIndexes(const GeoIndexes&) = delete;
  GeoIndexes& operator=(const GeoIndexes&) = delete;

  // Reads the catalog from `store` and builds every index from the stored
  // documents. Call once, before any other method. The store's error, or
  // internal for a corrupt catalog record or stored document. Each build's
  // time is measured on `clock`.
  Status Load(store::Store& store, const Clock& clock);

  bool Has(std::string_view table) const { return Find(table) != nullptr; }

  // (table, key) is now `doc`; no-op for a table without an index.
  void Follow(std::string_view table, std::string_view key, const CachedDocument& doc);

  // (table, key) is, in the store, `stored` (JSON text or absent); when the
  // store could not say, the key leaves the index (it holds no position the
  // store may not have).
  void FollowStored(std::string_view table, std::string_view key,
                    const Result<std::optional<std::string>>& stored);

  // The nearest documents of `table` (with `keep`, among the keys it
  // accepts). bad_request when the table has no geo index or
  // geo::CheckQuery refuses the query.
  Status Nearest(std::string_view table, const geo::GeoQuery& query, std::vector<geo::GeoHit>* out,
                 const geo::KeyFilter* keep = nullptr);

  // Reads again, from `store`, the positions of every document whose
  // (table, key) `in_scope` accepts, replacing what the indexes hold of
  // them (cluster mode: partitions this instance is about to serve, which
  // other instances wrote meanwhile). Writes to those documents must not
  // run meanwhile. The store's error, or internal for a corrupt document;
  // an index may then hold the scope half read again.
  Status Reload(store::Store& store,
                const std::function<bool(std::string_view table, std::string_view key)>& in_scope);

  std::vector<GeoTableStats> Stats() const;

 private:
  struct Table {
    GeoSpec spec;
    geo::GeoIndex index;
    double rebuild_ms = 0;
    mutable Mutex mu;
    std::unordered_set<std::string> unindexed SKIFF_GUARDED_BY(mu);
  };
  const Table* Find(std::string_view table) const;
  Table* Find(std::string_view table);
  // Puts `key` at `position`, or out of the index (counted unindexed when
  // `exists`).
  static void Place(Table& t, std::string_view key, const std::optional<GeoPoint>& position,
                    bool exists);
  static Status Build(store::Store& store, const Clock& clock, Table& t);
  // The stored documents of t's table that `in_scope` accepts (all when
  // null): positions into `entries`, keys without one into `unindexed`.
  static Status ReadStored(store::Store& store, const Table& t,
                           const std::function<bool(std::string_view key)>* in_scope,
                           std::vector<geo::GeoEntry>* entries,
                           std::unordered_set<std::string>* unindexed);

  std::map<std::string, std::unique_ptr<Table>, std::less<>> tables_;  // fixed after Load
};

}  // namespace skiff::server::internal

#endif  // SKIFF_SERVER_INTERNAL_GEO_INDEXES_H_
