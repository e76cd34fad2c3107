// DocumentCache: the server's documents in memory, in tiers, read through
// from the store, and the per-key total order.
//
// Keys are spread by hash over shards, each a map guarded by its own mutex.
// Every operation on a key runs inside With() under its shard's lock, so the
// operations on one key form one total order whatever connection they came
// from, while keys of other shards proceed in parallel (no global lock).
// Callers that persist a change queue it to the Committer inside the same
// With() call, which makes the store see each key's writes in that order too.
//
// Tiers: a document is hot (parsed) while used; Sweep() packs one idle for
// `pack_after` into compact bytes (doc::Pack) and drops one idle for
// `evict_after` from memory once the store holds its last write; With()
// brings either back. Time comes from the Clock given. After a sweep has
// freed a few MiB of parsed trees, the freed pages go back to the system
// (malloc_trim), so the resident set follows the tiers down.
// All methods are thread-safe.
#ifndef SKIFF_SERVER_INTERNAL_DOCUMENT_CACHE_H_
#define SKIFF_SERVER_INTERNAL_DOCUMENT_CACHE_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "doc/document.h"
#include "store/store.h"

namespace skiff::server::internal {

// One cached document; `exists` false records a known absence so repeated
// misses do not reach the store.
struct CachedDocument {
  bool exists = false;
  // A hot document is held parsed (`value`), or as the compact JSON a set
  // sent (`text`, with `value` null) until an op needs the tree: a set then
  // stores what it was sent and a get sends it back, neither building a
  // tree. DocumentCache::Parse turns the text form into the tree.
  doc::Value value;  // null while packed or in the text form
  std::string text;  // non-empty only in the text form
  size_t bytes = 0;  // JSON text size of `value` when it was last stored or loaded
  // The committer's number for the newest write of this document (0: none).
  // Until the committer has written it the entry may not be packed or
  // evicted, or a reload would miss it.
  uint64_t last_write = 0;
  // The number of its newest Committer::WriteLatest write (memory mode).
  uint64_t latest_write = 0;
  Clock::TimePoint last_used;
  std::optional<std::string> packed;  // set in the packed tier
};

struct TierCounts {
  uint64_t documents = 0;
  uint64_t bytes = 0;
};

struct TierStats {
  TierCounts hot;          // bytes: JSON text size
  TierCounts packed;       // bytes: packed size
  uint64_t evictions = 0;  // documents dropped from memory since start
};

class DocumentCache {
 public:
  DocumentCache(store::Store& store, const Clock& clock, size_t shard_count);

  // Runs fn(CachedDocument&) under the key's shard lock, loading the
  // document from the store first when it is not cached and unpacking it
  // when packed. The function may change the document; it must then call
  // Changed(). Returns the store's error (unavailable, internal) when
  // loading fails, in which case fn is not called.
  template <typename Fn>
  Status With(std::string_view table, std::string_view key, Fn&& fn) {
    Lookup entry(*this, table, key);
    if (!entry.found()) {
      Result<CachedDocument> loaded = Load(table, key);
      if (!loaded.ok()) return loaded.status();
      CountHot(entry.Insert(std::move(*loaded)), +1);
    } else if (entry.doc().packed) {
      SKIFF_RETURN_IF_ERROR(Unpack(entry.doc()));
    }
    entry.doc().last_used = clock_.NowCoarse();
    fn(entry.doc());
    return Status::Ok();
  }

  // Like With() for a change that replaces the document whatever it was
  // (set): a key not in memory is not read from the store first, and a
  // packed one is not unpacked, since neither old value would be used. fn
  // sees a document with `exists` false and must call Changed().
  template <typename Fn>
  void Replace(std::string_view table, std::string_view key, Fn&& fn) {
    Lookup entry(*this, table, key);
    CachedDocument& doc = entry.found() ? entry.doc() : entry.Insert(CachedDocument());
    if (doc.packed) DropPacked(doc);
    doc.last_used = clock_.NowCoarse();
    fn(doc);
  }

  // Updates the tier counters after fn changed `doc` (was_present/old_bytes
  // are the values before the change). Call inside With().
  void Changed(bool was_present, size_t old_bytes, const CachedDocument& doc);

  // The current JSON text of (table, key) for the committer (Committer::
  // Latest): nullopt when the document does not exist. False when the key
  // is not in memory, which cannot happen while a write of it is pending.
  // Also brings the document's `bytes` (and the hot tier's count) up to
  // date for changes that did not serialise it.
  bool LatestText(std::string_view table, std::string_view key, std::optional<std::string>* text);

  // Write number `seq` of (table, key) failed for good. Unless a newer write
  // of the key is queued, the cached copy is dropped, so the next access
  // reads what the store really holds.
  void WriteFailed(std::string_view table, std::string_view key, uint64_t seq);

  // Packs documents idle for `pack_after` and evicts those idle for
  // `evict_after` (zero disables either); only documents whose last write
  // is numbered up to `written_through` (Committer::written()) move.
  void Sweep(std::chrono::nanoseconds pack_after, std::chrono::nanoseconds evict_after,
             uint64_t written_through);

  TierStats stats() const;

  // Gives `doc` its tree when it is in the text form. The text was
  // validated when it arrived, so failing here is an internal error.
  static Status Parse(CachedDocument& doc);

 private:
  // Map keys are "table\0key": table names never contain NUL, so the
  // separator keeps them unambiguous. Lookups take a string_view, built
  // on the stack for all but very long keys, so finding a document
  // allocates nothing.
  struct IdHash {
    using is_transparent = void;
    size_t operator()(std::string_view id) const { return std::hash<std::string_view>{}(id); }
  };
  class DocumentId {
   public:
    DocumentId(std::string_view table, std::string_view key);
    DocumentId(const DocumentId&) = delete;
    DocumentId& operator=(const DocumentId&) = delete;
    std::string_view view() const { return view_; }

   private:
    char small_[192];
    std::string large_;
    std::string_view view_;
  };
  using DocumentMap = std::unordered_map<std::string, CachedDocument, IdHash, std::equal_to<>>;
  struct Shard {
    std::mutex mu;
    DocumentMap docs;  // guarded by mu
    // No document of the shard can move before this (guarded by mu; see
    // Sweep).
    Clock::TimePoint next_sweep{};
  };
  // One key's entry, looked up under its shard's lock, which it holds
  // until it goes.
  class Lookup {
   public:
    Lookup(DocumentCache& cache, std::string_view table, std::string_view key)
        : id_(table, key),
          shard_(cache.ShardFor(id_.view())),
          lock_(shard_.mu),
          it_(shard_.docs.find(id_.view())) {}
    bool found() const { return it_ != shard_.docs.end(); }
    CachedDocument& doc() { return it_->second; }
    // Adds the entry, which was not found.
    CachedDocument& Insert(CachedDocument doc) {
      it_ = shard_.docs.emplace(std::string(id_.view()), std::move(doc)).first;
      return it_->second;
    }
    void Erase() { it_ = shard_.docs.erase(it_); }

   private:
    const DocumentId id_;
    Shard& shard_;
    std::lock_guard<std::mutex> lock_;
    DocumentMap::iterator it_;
  };

  Shard& ShardFor(std::string_view id);
  Result<CachedDocument> Load(std::string_view table, std::string_view key);
  Status Unpack(CachedDocument& doc);
  // Forgets a packed document's bytes, leaving an absent hot entry.
  void DropPacked(CachedDocument& doc);
  void CountHot(const CachedDocument& doc, int sign);
  // Re-creates the map entries of documents just packed on the calling
  // thread (see the definition for why), appending the old ones, emptied, to
  // `old_entries` for the caller to free. Call under the shard's lock.
  static void Relocate(DocumentMap& docs, const std::vector<DocumentMap::iterator>& entries,
                       std::vector<DocumentMap::node_type>& old_entries);
  // Returns the memory of freed documents to the system once enough has
  // been freed; see the definition for why.
  void ReleaseFreedMemory(uint64_t released_json_bytes);

  store::Store& store_;
  const Clock& clock_;
  std::vector<std::unique_ptr<Shard>> shards_;
  std::atomic<uint64_t> hot_documents_{0};
  std::atomic<uint64_t> hot_bytes_{0};
  std::atomic<uint64_t> packed_documents_{0};
  std::atomic<uint64_t> packed_bytes_{0};
  std::atomic<uint64_t> evictions_{0};
  std::atomic<uint64_t> released_since_trim_{0};  // JSON bytes freed since malloc_trim
  // The limits the shards' next_sweep were computed for.
  std::mutex sweep_mu_;
  std::chrono::nanoseconds swept_pack_after_{-1};   // guarded by sweep_mu_
  std::chrono::nanoseconds swept_evict_after_{-1};  // guarded by sweep_mu_
};

}  // namespace skiff::server::internal

#endif  // SKIFF_SERVER_INTERNAL_DOCUMENT_CACHE_H_
