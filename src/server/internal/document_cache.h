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
  doc::Value value;  // null while packed
  size_t bytes = 0;  // JSON text size of `value` when it was last stored or loaded
  // Writes queued to the committer and not yet written: the entry may not
  // be evicted before they are, or a reload would miss them.
  uint32_t unpersisted = 0;
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
    std::string id = Id(table, key);
    Shard& shard = ShardFor(id);
    std::lock_guard<std::mutex> lock(shard.mu);
    auto it = shard.docs.find(id);
    if (it == shard.docs.end()) {
      Result<CachedDocument> loaded = Load(table, key);
      if (!loaded.ok()) return loaded.status();
      it = shard.docs.emplace(std::move(id), std::move(*loaded)).first;
      CountHot(it->second, +1);
    } else if (it->second.packed) {
      SKIFF_RETURN_IF_ERROR(Unpack(it->second));
    }
    it->second.last_used = clock_.Now();
    fn(it->second);
    return Status::Ok();
  }

  // Updates the tier counters after fn changed `doc` (was_present/old_bytes
  // are the values before the change). Call inside With().
  void Changed(bool was_present, size_t old_bytes, const CachedDocument& doc);

  // A write queued for (table, key) inside With() was written (`ok`) or
  // failed. A failure drops the cached copy once no other write of the key
  // is pending, so the next access reads what the store really holds.
  void Persisted(std::string_view table, std::string_view key, bool ok);

  // Packs documents idle for `pack_after` and evicts those idle for
  // `evict_after` (zero disables either).
  void Sweep(std::chrono::nanoseconds pack_after, std::chrono::nanoseconds evict_after);

  TierStats stats() const;

 private:
  using DocumentMap = std::unordered_map<std::string, CachedDocument>;
  struct Shard {
    std::mutex mu;
    DocumentMap docs;  // guarded by mu
  };

  static std::string Id(std::string_view table, std::string_view key);
  Shard& ShardFor(const std::string& id);
  Result<CachedDocument> Load(std::string_view table, std::string_view key);
  Status Unpack(CachedDocument& doc);
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
};

}  // namespace skiff::server::internal

#endif  // SKIFF_SERVER_INTERNAL_DOCUMENT_CACHE_H_
