#include "server/internal/geo_indexes.h"

#include <chrono>
#include <utility>

#include "doc/pack.h"

namespace skiff::server::internal {
namespace {

// Stored and cached documents were validated when they arrived; generous
// limits only guard against a store edited by hand.
doc::Limits StoredLimits() {
  doc::Limits limits;
  limits.max_depth = 1024;
  limits.max_document_bytes = size_t{1} << 31;
  return limits;
}

std::optional<GeoPoint> PositionOfText(const GeoSpec& spec, std::string_view json) {
  Result<doc::Value> value = doc::Parse(json, StoredLimits());
  if (!value.ok()) return std::nullopt;
  return PositionOf(spec, *value);
}

}  // namespace

Status GeoIndexes::Load(store::Store& store, const Clock& clock) {
  SKIFF_ASSIGN_OR_RETURN(std::vector<GeoSpec> specs, ListGeoIndexes(store));
  for (GeoSpec& spec : specs) {
    auto t = std::make_unique<Table>();
    t->spec = std::move(spec);
    SKIFF_RETURN_IF_ERROR(Build(store, clock, *t));
    std::string name = t->spec.table;
    tables_.emplace(std::move(name), std::move(t));
  }
  return Status::Ok();
}

Status GeoIndexes::ReadStored(store::Store& store, const Table& t,
                              const std::function<bool(std::string_view key)>* in_scope,
                              std::vector<geo::GeoEntry>* entries,
                              std::unordered_set<std::string>* unindexed) {
  std::string after;
  while (true) {
    SKIFF_ASSIGN_OR_RETURN(store::ScanPage page,
                           store.Scan(t.spec.table, after, store::kMaxScanLimit));
    for (store::KeyValue& item : page.items) {
      if (in_scope != nullptr && !(*in_scope)(item.key)) continue;
      Result<doc::Value> value = doc::Parse(item.value, StoredLimits());
      if (!value.ok()) {
        return Internal("stored document " + t.spec.table + "/" + item.key +
                        " is corrupt: " + value.status().message());
      }
      if (std::optional<GeoPoint> p = PositionOf(t.spec, *value)) {
        entries->push_back({std::move(item.key), p->lat, p->lon});
      } else {
        unindexed->insert(std::move(item.key));
      }
    }
    if (!page.next) break;
    after = *page.next;
  }
  return Status::Ok();
}

Status GeoIndexes::Build(store::Store& store, const Clock& clock, Table& t) {
  // Time of the whole build, store reads included: what a restart costs.
  const Clock::TimePoint start = clock.Now();
  std::vector<geo::GeoEntry> entries;
  std::unordered_set<std::string> unindexed;
  SKIFF_RETURN_IF_ERROR(ReadStored(store, t, nullptr, &entries, &unindexed));
  SKIFF_RETURN_IF_ERROR(t.index.Reset(entries));
  {
    MutexLock lock(&t.mu);
    t.unindexed = std::move(unindexed);
  }
  t.rebuild_ms = std::chrono::duration<double, std::milli>(clock.Now() - start).count();
  return Status::Ok();
}

const GeoIndexes::Table* GeoIndexes::Find(std::string_view table) const {
  auto it = tables_.find(table);
  return it == tables_.end() ? nullptr : it->second.get();
}

GeoIndexes::Table* GeoIndexes::Find(std::string_view table) {
  auto it = tables_.find(table);
  return it == tables_.end() ? nullptr : it->second.get();
}

void GeoIndexes::Place(Table& t, std::string_view key, const std::optional<GeoPoint>& position,
                       bool exists) {
  // PositionOf only gives positions the index accepts, so Upsert succeeds.
  const bool indexed = position && t.index.Upsert(key, position->lat, position->lon).ok();
  if (!indexed) t.index.Remove(key);
  MutexLock lock(&t.mu);
  if (exists && !indexed) {
    t.unindexed.emplace(key);
  } else if (auto it = t.unindexed.find(std::string(key)); it != t.unindexed.end()) {
    t.unindexed.erase(it);
  }
}

void GeoIndexes::Follow(std::string_view table, std::string_view key, const CachedDocument& doc) {
  Table* t = Find(table);
  if (t == nullptr) return;
  std::optional<GeoPoint> position;
  if (const auto* text = std::get_if<TextForm>(&doc.form)) {
    position = PositionOfText(t->spec, text->json);
  } else if (const auto* tree = std::get_if<TreeForm>(&doc.form)) {
    position = PositionOf(t->spec, tree->tree);
  } else if (const auto* packed = std::get_if<PackedForm>(&doc.form)) {
    // Not expected (a change unpacks the document first), but cheap to get
    // right. Bytes packed with a table's dictionary cannot be read here:
    // the index keeps what it had rather than drop the point.
    if (doc::DictionaryIdOf(packed->bytes) != 0) return;
    if (Result<doc::Value> value = doc::Unpack(packed->bytes); value.ok()) {
      position = PositionOf(t->spec, *value);
    }
  }
  Place(*t, key, position, doc.exists());
}

void GeoIndexes::FollowStored(std::string_view table, std::string_view key,
                              const Result<std::optional<std::string>>& stored) {
  Table* t = Find(table);
  if (t == nullptr) return;
  const bool exists = stored.ok() && stored->has_value();
  std::optional<GeoPoint> position;
  if (exists) position = PositionOfText(t->spec, **stored);
  // A document the store could not read is neither placed nor counted.
  Place(*t, key, position, exists);
}

Status GeoIndexes::Nearest(std::string_view table, const geo::GeoQuery& query,
                           std::vector<geo::GeoHit>* out, const geo::KeyFilter* keep) {
  Table* t = Find(table);
  if (t == nullptr) {
    return BadRequest("table '" + std::string(table) +
                      "' has no geo index (declare one with 'skiff geo add')");
  }
  return t->index.Nearest(query, out, keep);
}

Status GeoIndexes::Reload(
    store::Store& store,
    const std::function<bool(std::string_view table, std::string_view key)>& in_scope) {
  for (auto& [name, t] : tables_) {
    const std::function<bool(std::string_view)> in_table = [&, &name = name](std::string_view key) {
      return in_scope(name, key);
    };
    // The store has no scan by partition: the whole table is read and the
    // scope picked out. A hand-over is rare; this is its cost (docs/cluster.md).
    std::vector<geo::GeoEntry> entries;
    std::unordered_set<std::string> unindexed;
    SKIFF_RETURN_IF_ERROR(ReadStored(store, *t, &in_table, &entries, &unindexed));
    SKIFF_RETURN_IF_ERROR(t->index.ReplaceWhere(in_table, entries));
    MutexLock lock(&t->mu);
    std::erase_if(t->unindexed, [&](const std::string& key) { return in_table(key); });
    t->unindexed.merge(unindexed);
  }
  return Status::Ok();
}

std::vector<GeoTableStats> GeoIndexes::Stats() const {
  std::vector<GeoTableStats> out;
  for (const auto& [name, t] : tables_) {
    GeoTableStats s;
    s.table = name;
    s.reads = DescribeGeoSpec(t->spec);
    const geo::GeoIndexStats index = t->index.Stats();
    s.points = index.points;
    s.bytes = index.bytes;
    s.rebuild_ms = t->rebuild_ms;
    {
      MutexLock lock(&t->mu);
      s.unindexed = t->unindexed.size();
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace skiff::server::internal
