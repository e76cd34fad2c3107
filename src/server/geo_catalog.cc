#include "server/geo_catalog.h"

#include <cmath>

#include "doc/names.h"

namespace skiff::server {
namespace {

std::string Dotted(const doc::Path& path) {
  std::string out;
  for (const std::string& part : path) out += (out.empty() ? "" : ".") + part;
  return out;
}

nlohmann::json PathJson(const doc::Path& path) { return path; }

// The member at `path`, or nullptr.
const doc::Value* At(const doc::Value& value, const doc::Path& path) {
  const doc::Value* v = &value;
  for (const std::string& part : path) {
    if (!v->is_object()) return nullptr;
    auto it = v->find(part);
    if (it == v->end()) return nullptr;
    v = &*it;
  }
  return v;
}

std::optional<GeoPoint> Checked(const doc::Value* lat, const doc::Value* lon) {
  if (lat == nullptr || lon == nullptr || !lat->is_number() || !lon->is_number()) {
    return std::nullopt;
  }
  GeoPoint p{lat->get<double>(), lon->get<double>()};
  if (!std::isfinite(p.lat) || !std::isfinite(p.lon) || p.lat < -90 || p.lat > 90 || p.lon < -180 ||
      p.lon > 180) {
    return std::nullopt;
  }
  return p;
}

Status CheckSpec(const GeoSpec& spec) {
  SKIFF_RETURN_IF_ERROR(doc::ValidateTableName(spec.table));
  const bool pair = !spec.lat.empty() || !spec.lon.empty();
  if (pair && !spec.point.empty()) {
    return BadRequest("a geo index reads either --lat and --lon or --point, not both");
  }
  if (pair && (spec.lat.empty() || spec.lon.empty())) {
    return BadRequest("a geo index needs both --lat and --lon");
  }
  if (!pair && spec.point.empty()) {
    return BadRequest("a geo index needs --lat and --lon, or --point");
  }
  return Status::Ok();
}

Result<doc::Path> PathFrom(const nlohmann::json& record, const char* name) {
  doc::Path path;
  auto it = record.find(name);
  if (it == record.end()) return path;
  if (!it->is_array()) return Internal(std::string("geo record field '") + name + "' is corrupt");
  for (const nlohmann::json& part : *it) {
    if (!part.is_string()) {
      return Internal(std::string("geo record field '") + name + "' is corrupt");
    }
    path.push_back(part.get<std::string>());
  }
  return path;
}

}  // namespace

Result<doc::Path> ParseGeoPath(std::string_view dotted) {
  doc::Path path;
  size_t start = 0;
  while (true) {
    const size_t dot = dotted.find('.', start);
    std::string_view part = dotted.substr(start, dot == std::string_view::npos ? dot : dot - start);
    if (part.empty()) {
      return BadRequest("geo path '" + std::string(dotted) +
                        "' must be field names joined by '.', none empty");
    }
    path.emplace_back(part);
    if (dot == std::string_view::npos) return path;
    start = dot + 1;
  }
}

std::string DescribeGeoSpec(const GeoSpec& spec) {
  if (!spec.point.empty()) return "point " + Dotted(spec.point);
  return "lat " + Dotted(spec.lat) + ", lon " + Dotted(spec.lon);
}

std::optional<GeoPoint> PositionOf(const GeoSpec& spec, const doc::Value& value) {
  if (spec.point.empty()) return Checked(At(value, spec.lat), At(value, spec.lon));
  const doc::Value* point = At(value, spec.point);
  if (point == nullptr || !point->is_object()) return std::nullopt;
  auto type = point->find("type");
  auto coordinates = point->find("coordinates");
  if (type == point->end() || *type != "Point" || coordinates == point->end() ||
      !coordinates->is_array() || coordinates->size() < 2) {
    return std::nullopt;
  }
  // GeoJSON puts longitude first (RFC 7946, section 3.1.1).
  return Checked(&(*coordinates)[1], &(*coordinates)[0]);
}

Status AddGeoIndex(store::Store& store, const GeoSpec& spec) {
  SKIFF_RETURN_IF_ERROR(CheckSpec(spec));
  nlohmann::json record = nlohmann::json::object();
  if (spec.point.empty()) {
    record["lat"] = PathJson(spec.lat);
    record["lon"] = PathJson(spec.lon);
  } else {
    record["point"] = PathJson(spec.point);
  }
  return store.Put(kGeoTable, spec.table, record.dump());
}

Status DeleteGeoIndex(store::Store& store, std::string_view table) {
  SKIFF_RETURN_IF_ERROR(doc::ValidateTableName(table));
  SKIFF_ASSIGN_OR_RETURN(std::optional<std::string> existing, store.Get(kGeoTable, table));
  if (!existing.has_value()) {
    return BadRequest("table '" + std::string(table) + "' has no geo index");
  }
  return store.Delete(kGeoTable, table);
}

Result<std::vector<GeoSpec>> ListGeoIndexes(store::Store& store) {
  std::vector<GeoSpec> specs;
  std::string after;
  while (true) {
    SKIFF_ASSIGN_OR_RETURN(store::ScanPage page,
                           store.Scan(kGeoTable, after, store::kMaxScanLimit));
    for (const store::KeyValue& item : page.items) {
      nlohmann::json record = nlohmann::json::parse(item.value, nullptr, false);
      if (!record.is_object()) return Internal("geo record of '" + item.key + "' is corrupt");
      GeoSpec spec;
      spec.table = item.key;
      SKIFF_ASSIGN_OR_RETURN(spec.lat, PathFrom(record, "lat"));
      SKIFF_ASSIGN_OR_RETURN(spec.lon, PathFrom(record, "lon"));
      SKIFF_ASSIGN_OR_RETURN(spec.point, PathFrom(record, "point"));
      if (!CheckSpec(spec).ok()) return Internal("geo record of '" + item.key + "' is corrupt");
      specs.push_back(std::move(spec));
    }
    if (!page.next) return specs;
    after = *page.next;
  }
}

}  // namespace skiff::server
