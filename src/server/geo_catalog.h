// Geo catalog: which tables have a geo index and where their documents keep
// a position, in the store's "$geo" system table (one record per table).
//
// The admin CLI (`skiff geo add|delete|list`) writes the catalog; skiffd
// reads it when it starts and builds each index from the table's stored
// documents, so an index declared while skiffd runs takes effect at its next
// start. A position is either two number fields (a latitude path and a
// longitude path) or one GeoJSON Point ({"type":"Point","coordinates":
// [lon, lat]}). A document whose position is missing, not numbers or out of
// range is stored as usual and left out of the index.
// Functions are thread-safe when the Store is (every Store is).
#ifndef SKIFF_SERVER_GEO_CATALOG_H_
#define SKIFF_SERVER_GEO_CATALOG_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "doc/document.h"
#include "doc/path.h"
#include "store/store.h"

namespace skiff::server {

inline constexpr std::string_view kGeoTable = "$geo";

struct GeoSpec {
  std::string table;
  doc::Path lat;  // with lon: two number fields
  doc::Path lon;
  doc::Path point;  // instead: a GeoJSON Point
  friend bool operator==(const GeoSpec&, const GeoSpec&) = default;
};

struct GeoPoint {
  double lat = 0;
  double lon = 0;
};

// "a.b.c" -> {"a", "b", "c"}; bad_request for an empty path or part.
Result<doc::Path> ParseGeoPath(std::string_view dotted);

// "lat a.b, lon c" or "point p": for listings and messages.
std::string DescribeGeoSpec(const GeoSpec& spec);

// The position `spec` reads from `value`, or nullopt when it has none
// usable (missing, not numbers, latitude outside [-90, 90] or longitude
// outside [-180, 180]).
std::optional<GeoPoint> PositionOf(const GeoSpec& spec, const doc::Value& value);

// Declares (or replaces) the index of spec.table. bad_request for an
// invalid table name or a spec with neither (lat and lon) nor point, or
// both; the store's error when it fails.
Status AddGeoIndex(store::Store& store, const GeoSpec& spec);

// Removes the index of `table`; bad_request when it has none.
Status DeleteGeoIndex(store::Store& store, std::string_view table);

// Every declared index, in table order; internal when a record is corrupt.
Result<std::vector<GeoSpec>> ListGeoIndexes(store::Store& store);

}  // namespace skiff::server

#endif  // SKIFF_SERVER_GEO_CATALOG_H_
