#include "geo/geo_index.h"

#include <new>
#include <utility>

#include "geo/internal/point_index.h"
#include "geo/internal/search_region.h"

namespace skiff::geo {

using internal::PointIndex;
using internal::ReaderLock;
using internal::WriterLock;

GeoIndex::GeoIndex(RepackPolicy policy)
    : policy_(std::move(policy)), impl_(std::make_unique<PointIndex>()) {}
GeoIndex::~GeoIndex() { AwaitRepack(); }

Status GeoIndex::Upsert(std::string_view key, double lat, double lon) {
  SKIFF_RETURN_IF_ERROR(CheckPosition(lat, lon));
  bool pack = false;
  {
    WriterLock lock(&mu_);
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
    WriterLock lock(&mu_);
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

bool GeoIndex::EnoughChanges() const {
  return !repacking_ && policy_.EnoughChanges(changes_, impl_->size());
}

bool GeoIndex::StartPackIfDue() {
  if (repacking_ || !policy_.Due(changes_, impl_->size(), impl_->free_slots(),
                                 queried_.load(std::memory_order_relaxed))) {
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
    WriterLock index_lock(&mu_);
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
  std::unique_ptr<PointIndex> fresh;
  uint64_t generation = 0;
  try {
    std::vector<GeoEntry> entries;
    {
      ReaderLock lock(&mu_);
      generation = pack_generation_;
      if (generation == generation_) entries = impl_->Entries();
    }
    if (policy_.after_copy) policy_.after_copy();
    fresh = std::make_unique<PointIndex>();
    fresh->Load(entries);
  } catch (const std::bad_alloc&) {
    fresh.reset();  // the grown tree stays; the next due pack tries again
  }
  {
    WriterLock lock(&mu_);
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
  }
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
  auto fresh = std::make_unique<PointIndex>();
  fresh->Load(entries);
  {
    WriterLock lock(&mu_);
    impl_.swap(fresh);
    changes_ = 0;
    ++generation_;  // a pack in progress started on the index replaced here
    log_.clear();
  }
  return Status::Ok();  // the old index is freed here, outside the lock
}

Status GeoIndex::ReplaceWhere(const KeyFilter& which, const std::vector<GeoEntry>& entries) {
  for (const GeoEntry& e : entries) {
    if (Status s = CheckPosition(e.lat, e.lon); !s.ok()) {
      return BadRequest("key '" + e.key + "': " + s.message());
    }
  }
  std::vector<std::string> gone;
  {
    ReaderLock lock(&mu_);
    for (GeoEntry& e : impl_->Entries()) {
      if (which(e.key)) gone.push_back(std::move(e.key));
    }
  }
  // One write at a time, as any writer does, so a pack under way logs each.
  for (const std::string& key : gone) Remove(key);
  for (const GeoEntry& e : entries) SKIFF_RETURN_IF_ERROR(Upsert(e.key, e.lat, e.lon));
  return Status::Ok();
}

Status GeoIndex::Nearest(const GeoQuery& query, std::vector<GeoHit>* out, const KeyFilter* keep) {
  SKIFF_RETURN_IF_ERROR(CheckQuery(query));
  const internal::SearchRegion region(query);
  bool due = false;
  {
    ReaderLock lock(&mu_);
    impl_->Nearest(region, query.limit, out, keep);
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
    if (mu_.TryLock()) {
      pack = StartPackIfDue();
      mu_.Unlock();
    }
    if (pack) StartRepack();
  }
  return Status::Ok();
}

std::optional<GeoPosition> GeoIndex::Find(std::string_view key) const {
  ReaderLock lock(&mu_);
  return impl_->Find(key);
}

size_t GeoIndex::size() const {
  ReaderLock lock(&mu_);
  return impl_->size();
}

GeoIndexStats GeoIndex::Stats() const {
  ReaderLock lock(&mu_);
  GeoIndexStats stats = impl_->Stats();
  stats.repacks = repacks_;
  return stats;
}

}  // namespace skiff::geo
