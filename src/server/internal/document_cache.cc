#include "server/internal/document_cache.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <iterator>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "doc/pack.h"

namespace skiff::server::internal {

DocumentCache::DocumentCache(store::Store& store, const Clock& clock, size_t shard_count)
    : store_(store), clock_(clock) {
  SKIFF_CHECK(shard_count > 0);
  for (size_t i = 0; i < shard_count; ++i) shards_.push_back(std::make_unique<Shard>());
}

DocumentCache::DocumentId::DocumentId(std::string_view table, std::string_view key) {
  const size_t size = table.size() + 1 + key.size();
  char* out = small_;
  if (size > sizeof small_) {
    large_.resize(size);
    out = large_.data();
  }
  std::memcpy(out, table.data(), table.size());
  out[table.size()] = '\0';
  std::memcpy(out + table.size() + 1, key.data(), key.size());
  view_ = std::string_view(out, size);
}

DocumentCache::Shard& DocumentCache::ShardFor(std::string_view id) {
  return *shards_[IdHash{}(id) % shards_.size()];
}

Result<CachedDocument> DocumentCache::Load(std::string_view table, std::string_view key) {
  Result<std::optional<std::string>> text = store_.Get(table, key);
  if (!text.ok()) return text.status();
  CachedDocument doc;
  if (!text->has_value()) return doc;
  // Stored text was validated when it was written; generous limits only
  // guard against a store edited by hand.
  doc::Limits limits;
  limits.max_depth = 1024;
  limits.max_document_bytes = size_t{1} << 31;
  Result<doc::Value> value = doc::Parse(**text, limits);
  if (!value.ok()) {
    return Internal("stored document " + std::string(table) + "/" + std::string(key) +
                    " is corrupt: " + value.status().message());
  }
  doc.exists = true;
  doc.bytes = (*text)->size();
  doc.value = std::move(*value);
  return doc;
}

Status DocumentCache::Unpack(CachedDocument& doc) {
  Result<doc::Value> value = doc::Unpack(*doc.packed);
  if (!value.ok()) return value.status();
  packed_documents_.fetch_sub(1, std::memory_order_relaxed);
  packed_bytes_.fetch_sub(doc.packed->size(), std::memory_order_relaxed);
  doc.value = std::move(*value);
  doc.packed.reset();
  CountHot(doc, +1);
  return Status::Ok();
}

Status DocumentCache::Parse(CachedDocument& doc) {
  if (doc.text.empty()) return Status::Ok();
  doc::Limits limits;
  limits.max_depth = 1024;
  limits.max_document_bytes = size_t{1} << 31;
  Result<doc::Value> value = doc::Parse(doc.text, limits);
  if (!value.ok()) return Internal("cached document does not parse: " + value.status().message());
  doc.value = std::move(*value);
  std::string().swap(doc.text);  // free it, not just empty it
  return Status::Ok();
}

void DocumentCache::DropPacked(CachedDocument& doc) {
  packed_documents_.fetch_sub(1, std::memory_order_relaxed);
  packed_bytes_.fetch_sub(doc.packed->size(), std::memory_order_relaxed);
  doc.packed.reset();
  doc.exists = false;
  doc.value = doc::Value();
  doc.bytes = 0;
}

void DocumentCache::CountHot(const CachedDocument& doc, int sign) {
  if (!doc.exists) return;
  if (sign > 0) {
    hot_documents_.fetch_add(1, std::memory_order_relaxed);
    hot_bytes_.fetch_add(doc.bytes, std::memory_order_relaxed);
  } else {
    hot_documents_.fetch_sub(1, std::memory_order_relaxed);
    hot_bytes_.fetch_sub(doc.bytes, std::memory_order_relaxed);
  }
}

void DocumentCache::Changed(bool was_present, size_t old_bytes, const CachedDocument& doc) {
  if (was_present && doc.exists) {
    // The common case (a change to a document that stays): the count holds,
    // and most adds do not change the size either. Unsigned wrap-around
    // makes adding the difference right for a shrink too.
    if (doc.bytes != old_bytes)
      hot_bytes_.fetch_add(doc.bytes - old_bytes, std::memory_order_relaxed);
    return;
  }
  if (was_present) {
    hot_documents_.fetch_sub(1, std::memory_order_relaxed);
    hot_bytes_.fetch_sub(old_bytes, std::memory_order_relaxed);
  }
  CountHot(doc, +1);
}

bool DocumentCache::LatestText(std::string_view table, std::string_view key,
                               std::optional<std::string>* text) {
  Lookup entry(*this, table, key);
  if (!entry.found()) return false;
  CachedDocument& doc = entry.doc();
  if (!doc.exists) {
    text->reset();
  } else if (!doc.text.empty()) {
    *text = doc.text;
  } else if (doc.packed) {
    // Not expected (a document with a write pending is never packed), but
    // cheap to get right.
    Result<doc::Value> value = doc::Unpack(*doc.packed);
    if (!value.ok()) return false;
    *text = doc::Dump(*value);
  } else {
    *text = doc::Dump(doc.value);
    if ((*text)->size() != doc.bytes) {
      CountHot(doc, -1);
      doc.bytes = (*text)->size();
      CountHot(doc, +1);
    }
  }
  return true;
}

void DocumentCache::WriteFailed(std::string_view table, std::string_view key, uint64_t seq) {
  Lookup entry(*this, table, key);
  if (!entry.found()) return;
  CachedDocument& doc = entry.doc();
  if (doc.last_write != seq) return;  // a newer write carries the document now
  // The committer counts this write as written only after this call, so the
  // sweeper has not packed the entry: it is hot.
  CountHot(doc, -1);
  entry.Erase();
}

void DocumentCache::Sweep(std::chrono::nanoseconds pack_after, std::chrono::nanoseconds evict_after,
                          uint64_t written_through) {
  uint64_t released = 0;  // JSON text bytes of the trees freed by this pass
  // What this pass frees is freed only after its last allocation. glibc's
  // per-thread cache hands a chunk freed by this thread to its next
  // allocation of that size, so freeing trees while packing would put the
  // packed bytes and new entries back into the trees' pages and pin them.
  std::vector<doc::Value> freed_trees;
  std::vector<DocumentMap::node_type> freed_entries;
  // A pass walks a shard only once one of its documents may be due, so a
  // server whose documents are all in use does not walk millions of them
  // every period. Each walk notes when its earliest remaining document
  // falls due; a document touched later falls due no sooner than `now` plus
  // the shorter limit, since touching it sets last_used to at least `now`.
  std::lock_guard<std::mutex> sweep_lock(sweep_mu_);
  const bool same_limits = pack_after == swept_pack_after_ && evict_after == swept_evict_after_;
  swept_pack_after_ = pack_after;
  swept_evict_after_ = evict_after;
  constexpr auto kNever = Clock::TimePoint::max();
  auto after = [&](Clock::TimePoint t, std::chrono::nanoseconds limit) {
    return limit.count() > 0 ? t + limit : kNever;
  };
  for (const std::unique_ptr<Shard>& shard : shards_) {
    std::lock_guard<std::mutex> lock(shard->mu);
    Clock::TimePoint now = clock_.Now();
    if (same_limits && now < shard->next_sweep) continue;
    Clock::TimePoint next_due = std::min(after(now, pack_after), after(now, evict_after));
    std::vector<DocumentMap::iterator> packed_now;
    for (auto it = shard->docs.begin(); it != shard->docs.end();) {
      CachedDocument& doc = it->second;
      auto idle = now - doc.last_used;
      bool settled = doc.last_write <= written_through;
      if (settled && evict_after.count() > 0 && idle >= evict_after) {
        if (doc.packed) {
          packed_documents_.fetch_sub(1, std::memory_order_relaxed);
          packed_bytes_.fetch_sub(doc.packed->size(), std::memory_order_relaxed);
        } else {
          CountHot(doc, -1);
        }
        if (doc.exists) evictions_.fetch_add(1, std::memory_order_relaxed);
        released += doc.packed ? doc.packed->size() : doc.bytes;
        auto next = std::next(it);
        freed_entries.push_back(shard->docs.extract(it));
        it = next;
        continue;
      }
      if (settled && doc.exists && !doc.packed && pack_after.count() > 0 && idle >= pack_after &&
          Parse(doc).ok()) {
        CountHot(doc, -1);
        doc.packed = doc::Pack(doc.value);
        freed_trees.push_back(std::move(doc.value));
        doc.value = doc::Value();
        released += doc.bytes;
        packed_documents_.fetch_add(1, std::memory_order_relaxed);
        packed_bytes_.fetch_add(doc.packed->size(), std::memory_order_relaxed);
        packed_now.push_back(it);
      }
      // When this document, staying as it now is, can next move. One that
      // is due but could not move (its last write has not landed, or it did
      // not parse) is looked at again next pass. A pending write alone does
      // not make a document due: writes land long before pack_after.
      Clock::TimePoint due = doc.exists && !doc.packed && pack_after.count() > 0
                                 ? doc.last_used + pack_after
                                 : after(doc.last_used, evict_after);
      next_due = std::min(next_due, std::max(due, now));
      ++it;
    }
    shard->next_sweep = next_due;
    Relocate(shard->docs, packed_now, freed_entries);
  }
  freed_trees.clear();
  freed_entries.clear();
  ReleaseFreedMemory(released);
}

void DocumentCache::Relocate(DocumentMap& docs, const std::vector<DocumentMap::iterator>& entries,
                             std::vector<DocumentMap::node_type>& old_entries) {
  // A hot document's tree was allocated next to its map entry (both on the
  // connection's thread), so the entry would pin a page in the middle of
  // every freed tree and malloc_trim could return little. Re-creating the
  // entry here puts it, with the packed bytes, among this thread's
  // allocations and leaves the tree's pages wholly free. The key is copied,
  // not moved: moving would keep its old heap buffer.
  const size_t first = old_entries.size();
  // Extracting invalidates only the extracted entry; inserting comes after,
  // since it may rehash (it does not: the count never exceeds the one
  // before).
  for (DocumentMap::iterator it : entries) old_entries.push_back(docs.extract(it));
  for (size_t i = first; i < old_entries.size(); ++i) {
    DocumentMap::node_type& node = old_entries[i];
    docs.emplace(std::string(node.key()), std::move(node.mapped()));
  }
}

void DocumentCache::ReleaseFreedMemory(uint64_t released_json_bytes) {
  // glibc keeps freed chunks for reuse and returns only the top of a heap to
  // the system, so the pages of trees freed in the middle of the heap would
  // stay resident for good: after packing, the resident set would not fall.
  // malloc_trim hands every whole free page of every arena back. It walks
  // the free lists under the arena locks, so it runs only once a few MiB of
  // trees (about 7 heap bytes per JSON byte) have been freed since the last.
  constexpr uint64_t kTrimAfterJsonBytes = 1 << 20;
  const uint64_t pending =
      released_since_trim_.fetch_add(released_json_bytes, std::memory_order_relaxed) +
      released_json_bytes;
  if (pending < kTrimAfterJsonBytes) return;
  released_since_trim_.store(0, std::memory_order_relaxed);
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

TierStats DocumentCache::stats() const {
  TierStats s;
  s.hot = {hot_documents_.load(std::memory_order_relaxed),
           hot_bytes_.load(std::memory_order_relaxed)};
  s.packed = {packed_documents_.load(std::memory_order_relaxed),
              packed_bytes_.load(std::memory_order_relaxed)};
  s.evictions = evictions_.load(std::memory_order_relaxed);
  return s;
}

}  // namespace skiff::server::internal
