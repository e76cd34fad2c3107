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
  SKIFF_ASSIGN_OR_RETURN(std::optional<std::string> text, store_.Get(table, key));
  CachedDocument doc;
  if (!text.has_value()) return doc;
  // Stored text was validated when it was written; generous limits only
  // guard against a store edited by hand.
  doc::Limits limits;
  limits.max_depth = 1024;
  limits.max_document_bytes = size_t{1} << 31;
  Result<doc::Value> value = doc::Parse(*text, limits);
  if (!value.ok()) {
    return Internal("stored document " + std::string(table) + "/" + std::string(key) +
                    " is corrupt: " + value.status().message());
  }
  doc.form = TreeForm{std::move(*value), text->size()};
  return doc;
}

Status DocumentCache::LoadInto(Lookup& entry, std::string_view table, std::string_view key) {
  // Past a few rounds of removals the read is made under the lock, so a
  // busy shard cannot keep a loader going round for ever.
  constexpr int kUnlockedTries = 3;
  for (int attempt = 0; attempt < kUnlockedTries; ++attempt) {
    const uint64_t removals = entry.removals();
    entry.Unlock();
    Result<CachedDocument> loaded = Load(table, key);
    entry.Relock();
    if (entry.found()) return Status::Ok();  // written or loaded meanwhile: newer or the same
    if (!loaded.ok()) return loaded.status();
    if (entry.removals() != removals) continue;
    Count(entry.Insert(std::move(*loaded)).form, +1);
    return Status::Ok();
  }
  SKIFF_ASSIGN_OR_RETURN(CachedDocument loaded, Load(table, key));
  Count(entry.Insert(std::move(loaded)).form, +1);
  return Status::Ok();
}

Status DocumentCache::Unpack(CachedDocument& doc) {
  const PackedForm& packed = std::get<PackedForm>(doc.form);
  const size_t bytes = packed.json_bytes;
  if (doc::HoldsText(packed.bytes)) {
    // Back to the text it was: a get sends it as it is, and only an add or
    // merge pays for a tree.
    SKIFF_ASSIGN_OR_RETURN(std::string json, UnpackText(packed.bytes));
    doc.form = TextForm{std::move(json)};
    return Status::Ok();
  }
  SKIFF_ASSIGN_OR_RETURN(doc::Value value, doc::Unpack(packed.bytes));
  doc.form = TreeForm{std::move(value), bytes};
  return Status::Ok();
}

Result<std::string> DocumentCache::UnpackText(std::string_view packed) const {
  const uint32_t id = doc::DictionaryIdOf(packed);
  return doc::UnpackText(packed, id != 0 ? dictionaries_.ById(id) : nullptr);
}

Status DocumentCache::EnsureTree(CachedDocument& doc) {
  TextForm* text = std::get_if<TextForm>(&doc.form);
  if (text == nullptr) return Status::Ok();
  doc::Limits limits;
  limits.max_depth = 1024;
  limits.max_document_bytes = size_t{1} << 31;
  Result<doc::Value> value = doc::Parse(text->json, limits);
  if (!value.ok()) return Internal("cached document does not parse: " + value.status().message());
  const size_t bytes = text->json.size();
  doc.form = TreeForm{std::move(*value), bytes};  // frees the text
  return Status::Ok();
}

void DocumentCache::Count(Tier tier, size_t bytes, int sign) {
  if (tier == Tier::kNone) return;
  auto& documents = tier == Tier::kHot ? hot_documents_ : packed_documents_;
  auto& total = tier == Tier::kHot ? hot_bytes_ : packed_bytes_;
  if (sign > 0) {
    documents.fetch_add(1, std::memory_order_relaxed);
    total.fetch_add(bytes, std::memory_order_relaxed);
  } else {
    documents.fetch_sub(1, std::memory_order_relaxed);
    total.fetch_sub(bytes, std::memory_order_relaxed);
  }
}

void DocumentCache::Count(const DocumentForm& form, int sign) {
  Count(TierOf(form), TierBytesOf(form), sign);
}

void DocumentCache::Recount(Tier tier, size_t bytes, const DocumentForm& form) {
  const Tier now = TierOf(form);
  const size_t now_bytes = TierBytesOf(form);
  if (now == tier) {
    // The common case (a change to a document that stays): the count holds,
    // and most adds do not change the size either. Unsigned wrap-around
    // makes adding the difference right for a shrink too.
    if (now_bytes != bytes && now != Tier::kNone) {
      (now == Tier::kHot ? hot_bytes_ : packed_bytes_)
          .fetch_add(now_bytes - bytes, std::memory_order_relaxed);
    }
    return;
  }
  Count(tier, bytes, -1);
  Count(now, now_bytes, +1);
}

bool DocumentCache::LatestText(std::string_view table, std::string_view key,
                               std::optional<std::string>* text) {
  Lookup entry(*this, table, key);
  if (!entry.found()) return false;
  CachedDocument& doc = entry.doc();
  const Tier tier = TierOf(doc.form);
  const size_t bytes = TierBytesOf(doc.form);
  if (const auto* t = std::get_if<TextForm>(&doc.form)) {
    *text = t->json;
  } else if (auto* tree = std::get_if<TreeForm>(&doc.form)) {
    *text = doc::Dump(tree->tree);
    tree->json_bytes = (*text)->size();
  } else if (const auto* p = std::get_if<PackedForm>(&doc.form)) {
    // Not expected (a document with a write pending is never packed), but
    // cheap to get right.
    if (doc::HoldsText(p->bytes)) {
      Result<std::string> json = UnpackText(p->bytes);
      if (!json.ok()) return false;
      *text = std::move(*json);
    } else {
      Result<doc::Value> value = doc::Unpack(p->bytes);
      if (!value.ok()) return false;
      *text = doc::Dump(*value);
    }
  } else {
    text->reset();
  }
  Recount(tier, bytes, doc.form);
  return true;
}

void DocumentCache::WriteFailed(std::string_view table, std::string_view key, uint64_t seq,
                                const std::function<void()>& dropped) {
  Lookup entry(*this, table, key);
  if (!entry.found()) return;
  CachedDocument& doc = entry.doc();
  if (doc.last_write != seq) return;  // a newer write carries the document now
  Count(doc.form, -1);
  entry.Erase();
  if (dropped) dropped();
}

void DocumentCache::DropIf(
    const std::function<bool(std::string_view table, std::string_view key)>& drop) {
  for (const std::unique_ptr<Shard>& shard : shards_) {
    MutexLock lock(&shard->mu);
    for (auto it = shard->docs.begin(); it != shard->docs.end();) {
      const std::string_view id = it->first;
      const size_t nul = id.find('\0');
      if (!drop(id.substr(0, nul), id.substr(nul + 1))) {
        ++it;
        continue;
      }
      Count(it->second.form, -1);
      shard->docs.erase(it++);
      ++shard->removals;
    }
  }
}

void DocumentCache::Sweep(std::chrono::nanoseconds pack_after, std::chrono::nanoseconds evict_after,
                          uint64_t written_through) {
  Freed freed;
  // A pass walks a shard only once one of its documents may be due, so a
  // server whose documents are all in use does not walk millions of them
  // every period. Each walk notes when its earliest remaining document
  // falls due; a document touched later falls due no sooner than `now` plus
  // the shorter limit, since touching it sets last_used to at least `now`.
  MutexLock sweep_lock(&sweep_mu_);
  const bool same_limits = pack_after == swept_pack_after_ && evict_after == swept_evict_after_;
  swept_pack_after_ = pack_after;
  swept_evict_after_ = evict_after;
  constexpr auto kNever = Clock::TimePoint::max();
  auto after = [&](Clock::TimePoint t, std::chrono::nanoseconds limit) {
    return limit.count() > 0 ? t + limit : kNever;
  };
  for (const std::unique_ptr<Shard>& shard : shards_) {
    {
      MutexLock lock(&shard->mu);
      Clock::TimePoint now = clock_.Now();
      if (same_limits && now < shard->next_sweep) continue;
      Clock::TimePoint next_due = std::min(after(now, pack_after), after(now, evict_after));
      std::vector<DocumentMap::iterator> packed_now;
      for (auto it = shard->docs.begin(); it != shard->docs.end();) {
        CachedDocument& doc = it->second;
        auto idle = now - doc.last_used;
        bool settled = doc.last_write <= written_through;
        if (settled && evict_after.count() > 0 && idle >= evict_after) {
          Count(doc.form, -1);
          if (doc.exists()) evictions_.fetch_add(1, std::memory_order_relaxed);
          freed.json_bytes += TierBytesOf(doc.form);
          auto next = std::next(it);
          freed.entries.push_back(shard->docs.extract(it));
          ++shard->removals;
          it = next;
          continue;
        }
        if (settled && TierOf(doc.form) == Tier::kHot && pack_after.count() > 0 &&
            idle >= pack_after) {
          const std::string_view id = it->first;
          PackHot(doc, id.substr(0, id.find('\0')), freed);
          packed_now.push_back(it);
        }
        // When this document, staying as it now is, can next move. One that
        // is due but could not move (its last write has not landed) is
        // looked at again next pass. A pending write alone does not make a
        // document due: writes land long before pack_after.
        Clock::TimePoint due = TierOf(doc.form) == Tier::kHot && pack_after.count() > 0
                                   ? doc.last_used + pack_after
                                   : after(doc.last_used, evict_after);
        next_due = std::min(next_due, std::max(due, now));
        ++it;
      }
      shard->next_sweep = next_due;
      Relocate(shard->docs, packed_now, freed.entries);
      // The map never shrinks by itself: after evicting most of a shard its
      // slot array (about 110 bytes a slot) would stay as large as it grew,
      // 27 MiB for 200,000 documents.
      if (shard->docs.size() * 4 < shard->docs.capacity()) shard->docs.rehash(0);
    }
    // Outside the shard's lock. A batch bounds what a pass holds (one
    // shard's worth past the limit), where holding everything to the end
    // once held every tree of a 200,000-document server.
    // Training a dictionary allocates and frees a few MiB (zstd's own
    // working memory): returned at once, so it does not raise the peak.
    const bool trained = dictionaries_.TrainReady();
    if (trained || freed.json_bytes >= kFreedBatchJsonBytes) ReleaseFreedMemory(freed, trained);
  }
  ReleaseFreedMemory(freed, false);
}

void DocumentCache::PackHot(CachedDocument& doc, std::string_view table, Freed& freed) {
  Count(doc.form, -1);
  if (TextForm* text = std::get_if<TextForm>(&doc.form)) {
    // Packed from the text itself: parsing it would build a tree about four
    // times its size only to throw it away.
    const size_t json_bytes = text->json.size();
    std::string packed = doc::PackText(text->json, dictionaries_.ForPacking(table, text->json));
    freed.texts.push_back(std::move(text->json));
    doc.form = PackedForm{std::move(packed), json_bytes};
  } else {
    TreeForm& tree = std::get<TreeForm>(doc.form);
    const size_t json_bytes = tree.json_bytes;
    std::string packed = doc::Pack(tree.tree);
    freed.trees.push_back(std::move(tree.tree));
    doc.form = PackedForm{std::move(packed), json_bytes};
  }
  freed.json_bytes += std::get<PackedForm>(doc.form).json_bytes;
  Count(doc.form, +1);
}

void DocumentCache::Relocate(DocumentMap& docs, const std::vector<DocumentMap::iterator>& entries,
                             std::vector<DocumentMap::node_type>& old_entries) {
  // A hot document's tree was allocated on the connection's thread, and so
  // was its key's heap buffer when the key is too long to be stored inside
  // the string; that buffer would pin a page in the middle of every freed
  // tree and malloc_trim could return little. Re-creating such an entry
  // here puts its key, with the packed bytes, among this thread's
  // allocations and leaves the tree's pages wholly free. (The entry itself
  // lives in the map's slot array.) The key is copied, not moved: moving
  // would keep its old buffer.
  const size_t first = old_entries.size();
  const size_t inline_capacity = std::string().capacity();
  // Extracting invalidates only the extracted entry; inserting comes after
  // every extraction, since it may rehash.
  for (DocumentMap::iterator it : entries) {
    if (it->first.capacity() > inline_capacity) old_entries.push_back(docs.extract(it));
  }
  for (size_t i = first; i < old_entries.size(); ++i) {
    DocumentMap::node_type& node = old_entries[i];
    docs.emplace(std::string(node.key()), std::move(node.mapped()));
  }
}

void DocumentCache::ReleaseFreedMemory(Freed& freed, bool trim) {
  // Freed in batches rather than one by one: glibc's per-thread cache
  // hands a chunk this thread just freed to its next allocation of that
  // size, whatever arena the chunk came from, and holds at most 7 of a
  // size. Freeing each document as it is packed would put packed bytes
  // (and new entries) into the pages of freed texts and trees, one by one,
  // and pin them; freeing a batch lets at most those 7 per size go that
  // way.
  const uint64_t released = freed.json_bytes;
  freed.texts.clear();
  freed.trees.clear();
  freed.entries.clear();
  freed.json_bytes = 0;
  // glibc keeps freed chunks for reuse and returns only the top of a heap to
  // the system, so the pages of documents freed in the middle of the heap
  // would stay resident for good: after packing, the resident set would not
  // fall. malloc_trim hands every whole free page of every arena back. It
  // walks the free lists under the arena locks, so it runs only once a few
  // MiB have been freed since the last.
  const uint64_t pending =
      released_since_trim_.fetch_add(released, std::memory_order_relaxed) + released;
  if (!trim && pending < kTrimAfterJsonBytes) return;
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
