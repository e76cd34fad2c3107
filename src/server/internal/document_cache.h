// DocumentCache: the server's documents in memory, in tiers, read through
// from the store, and the per-key total order.
//
// Keys are spread by hash over shards, each a map guarded by its own mutex.
// Every operation on a key runs inside Access() under its shard's lock, so
// the operations on one key form one total order whatever connection they
// came from, while keys of other shards proceed in parallel (no global lock).
// Documents (documents.h) queues each change to the committer inside the
// same Access() call, which makes the store see each key's writes in that
// order too.
//
// Tiers: a document is hot (text or tree) while used; Sweep() packs one idle
// for `pack_after` into compact bytes (doc::PackText for text, so packing
// never builds a tree, with its table's dictionary once it has one:
// pack_dictionaries.h; doc::Pack for a tree) and drops one idle for
// `evict_after` from memory once the store holds its last write; Access()
// brings either back. The tier counts follow the documents' forms
// (cached_document.h): Access and every method here recount a document from
// its form before and after touching it, so no caller adjusts a counter.
// Time comes from the Clock given. A sweep frees what it packs or evicts in
// bounded batches, shrinks a shard's map once eviction has mostly emptied
// it, and once a few MiB have been freed hands the freed pages back to the
// system (malloc_trim), so the resident set follows the tiers down.
// All methods are thread-safe.
#ifndef SKIFF_SERVER_INTERNAL_DOCUMENT_CACHE_H_
#define SKIFF_SERVER_INTERNAL_DOCUMENT_CACHE_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <absl/container/flat_hash_map.h>

#include "base/clock.h"
#include "base/mutex.h"
#include "base/status.h"
#include "server/internal/cached_document.h"
#include "server/internal/pack_dictionaries.h"
#include "store/store.h"

namespace skiff::server::internal {

struct TierCounts {
  uint64_t documents = 0;
  uint64_t bytes = 0;
};

struct TierStats {
  TierCounts hot;          // bytes: JSON text size
  TierCounts packed;       // bytes: packed size
  uint64_t evictions = 0;  // documents dropped from memory since start
};

// How Access finds the document.
enum class AccessMode {
  // Read from the store when not in memory; unpacked when packed.
  kLoad,
  // The same, but only if it is in memory: otherwise Access returns false
  // for `resident` without calling fn (the caller does the store read on a
  // thread that may block).
  kResidentOnly,
  // The change replaces the document whatever it was (set): not read from
  // the store, a packed copy dropped; fn sees it absent unless hot.
  kReplace,
};

class DocumentCache {
 public:
  DocumentCache(store::Store& store, const Clock& clock, size_t shard_count);

  // Runs fn(CachedDocument&) under the key's shard lock; fn may change the
  // document's form and its write numbers. Returns the store's error
  // (unavailable, internal) when loading fails, in which case fn is not
  // called; with kResidentOnly and a document not in memory, sets
  // *resident false and does nothing else.
  template <typename Fn>
  Status Access(std::string_view table, std::string_view key, AccessMode mode, Fn&& fn,
                bool* resident = nullptr) {
    Lookup entry(*this, table, key);
    if (resident) *resident = true;
    if (!entry.found()) {
      if (mode == AccessMode::kResidentOnly) {
        if (resident) *resident = false;
        return Status::Ok();
      }
      if (mode == AccessMode::kReplace) {
        entry.Insert(CachedDocument());
      } else {
        SKIFF_RETURN_IF_ERROR(LoadInto(entry, table, key));
      }
    }
    CachedDocument& doc = entry.doc();
    const Tier tier = TierOf(doc.form);
    const size_t bytes = TierBytesOf(doc.form);
    if (tier == Tier::kPacked) {
      if (mode == AccessMode::kReplace) {
        doc.form = AbsentForm{};
      } else {
        Status unpacked = Unpack(doc);
        if (!unpacked.ok()) return unpacked;
      }
    }
    doc.last_used = clock_.NowCoarse();
    fn(doc);
    Recount(tier, bytes, doc.form);
    return Status::Ok();
  }

  // The current JSON text of (table, key) for the committer (Committer::
  // Latest): nullopt when the document does not exist. False when the key
  // is not in memory, which cannot happen while a write of it is pending.
  // A tree's byte count is brought up to date on the way.
  bool LatestText(std::string_view table, std::string_view key, std::optional<std::string>* text);

  // Write number `seq` of (table, key) failed for good. Unless a newer write
  // of the key is queued, the cached copy is dropped, so the next access
  // reads what the store really holds, and `dropped` runs, still under the
  // key's lock.
  void WriteFailed(std::string_view table, std::string_view key, uint64_t seq,
                   const std::function<void()>& dropped);

  // Packs documents idle for `pack_after` and evicts those idle for
  // `evict_after` (zero disables either); only documents whose last write
  // is numbered up to `written_through` (Committer::written()) move.
  void Sweep(std::chrono::nanoseconds pack_after, std::chrono::nanoseconds evict_after,
             uint64_t written_through);

  // Drops every document for which drop(table, key) is true, whatever its
  // state (cluster mode: a partition handed over; its writes are fenced).
  void DropIf(const std::function<bool(std::string_view table, std::string_view key)>& drop);

  TierStats stats() const;

  // Gives a text-form document its tree (no change to what the tiers
  // count). The text was validated when it arrived, so failing here is an
  // internal error.
  static Status EnsureTree(CachedDocument& doc);

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
  // Inside a shard, an open-addressing map: a lookup reads one group of
  // control bytes and then the slot, where std::unordered_map read the
  // bucket array, the node before and the node, each a likely cache miss
  // in a shard of many keys (set-small/pipelined on the SQLite store went
  // from 284-289 k to 342-348 k sets/s; docs/benchmarks.md). Its hash is not
  // IdHash: the shard is IdHash's low bits, and the map takes its control
  // bytes from the low bits of its own hash, which would then be the same
  // for every key of a shard.
  struct MapHash {
    using is_transparent = void;
    size_t operator()(std::string_view id) const { return absl::Hash<std::string_view>{}(id); }
  };
  using DocumentMap = absl::flat_hash_map<std::string, CachedDocument, MapHash, std::equal_to<>>;
  struct Shard {
    Mutex mu;
    DocumentMap docs SKIFF_GUARDED_BY(mu);
    // Entries dropped so far (evicted, or after a failed write): a store
    // read made without the lock is stale if this moved meanwhile.
    uint64_t removals SKIFF_GUARDED_BY(mu) = 0;
    // No document of the shard can move before this (see Sweep).
    Clock::TimePoint next_sweep SKIFF_GUARDED_BY(mu){};
  };
  // One key's entry, looked up under its shard's lock, which it holds
  // until it goes.
  class Lookup {
   public:
    Lookup(DocumentCache& cache, std::string_view table, std::string_view key)
        : id_(table, key), shard_(cache.ShardFor(id_.view())), lock_(&shard_.mu) {
      shard_.mu.AssertHeld();
      it_ = shard_.docs.find(id_.view());
    }
    // The lock is a member, which the analysis does not follow: each use
    // asserts it.
    bool found() const {
      shard_.mu.AssertHeld();
      return it_ != shard_.docs.end();
    }
    CachedDocument& doc() { return it_->second; }
    // Adds the entry, which was not found.
    CachedDocument& Insert(CachedDocument doc) {
      shard_.mu.AssertHeld();
      it_ = shard_.docs.emplace(std::string(id_.view()), std::move(doc)).first;
      return it_->second;
    }
    void Erase() {
      shard_.mu.AssertHeld();
      shard_.docs.erase(it_);
      it_ = shard_.docs.end();
      ++shard_.removals;
    }
    uint64_t removals() const {
      shard_.mu.AssertHeld();
      return shard_.removals;
    }
    // Lets the shard go (for a store read) and takes it again, looking the
    // key up anew. Unchecked: the analysis does not follow a member lock.
    void Unlock() SKIFF_NO_THREAD_SAFETY_ANALYSIS { lock_.Unlock(); }
    void Relock() SKIFF_NO_THREAD_SAFETY_ANALYSIS {
      lock_.Lock();
      shard_.mu.AssertHeld();
      it_ = shard_.docs.find(id_.view());
    }

   private:
    const DocumentId id_;
    Shard& shard_;
    MutexLock lock_;
    DocumentMap::iterator it_;
  };

  Shard& ShardFor(std::string_view id);
  Result<CachedDocument> Load(std::string_view table, std::string_view key);
  // Puts the stored document in `entry`, which was not found. The store is
  // read with the shard's lock released, so a slow store stalls only this
  // caller, never another key of the shard (which an I/O thread may want).
  // If the key came in meanwhile that entry is used; if an entry of the
  // shard was dropped meanwhile (this key may have been written and
  // evicted since the read began) the read is made again.
  Status LoadInto(Lookup& entry, std::string_view table, std::string_view key);
  Status Unpack(CachedDocument& doc);
  // Adds (sign +1) or removes (-1) a form from the tier counts.
  void Count(const DocumentForm& form, int sign);
  void Count(Tier tier, size_t bytes, int sign);
  // A document was (tier, bytes) and is now `form`.
  void Recount(Tier tier, size_t bytes, const DocumentForm& form);
  // What a sweep pass has taken out of memory and not freed yet (see
  // ReleaseFreedMemory for why it waits): the texts and trees of documents
  // packed, and the entries of documents evicted or re-created.
  struct Freed {
    std::vector<std::string> texts;
    std::vector<doc::Value> trees;
    std::vector<DocumentMap::node_type> entries;
    uint64_t json_bytes = 0;  // the JSON text size of what it holds
  };
  // A pass frees what it holds once it holds this much JSON's worth (4 MiB
  // of texts, about 18 MiB of trees), between two shards.
  static constexpr uint64_t kFreedBatchJsonBytes = 4 << 20;
  // And returns freed memory to the system once this much has been freed.
  static constexpr uint64_t kTrimAfterJsonBytes = 1 << 20;

  // Packs a hot document of `table` in place: text as text (no tree is
  // built; with the table's dictionary once it has one), a tree as a tree.
  // What it held goes to `freed`. Call under the shard's lock.
  void PackHot(CachedDocument& doc, std::string_view table, Freed& freed);
  // The text of PackText's bytes, with their table's dictionary if any.
  Result<std::string> UnpackText(std::string_view packed) const;
  // Re-creates on the calling thread the entries of documents just packed
  // whose keys live on the heap (see the definition for why), appending the
  // old ones, emptied, to
  // `old_entries` for the caller to free. Call under the shard's lock.
  static void Relocate(DocumentMap& docs, const std::vector<DocumentMap::iterator>& entries,
                       std::vector<DocumentMap::node_type>& old_entries);
  // Frees what `freed` holds and returns the memory of freed documents to
  // the system once enough has been freed, or now with `trim`; see the
  // definition for why. Call with no shard lock held.
  void ReleaseFreedMemory(Freed& freed, bool trim);

  store::Store& store_;
  const Clock& clock_;
  PackDictionaries dictionaries_;
  std::vector<std::unique_ptr<Shard>> shards_;
  std::atomic<uint64_t> hot_documents_{0};
  std::atomic<uint64_t> hot_bytes_{0};
  std::atomic<uint64_t> packed_documents_{0};
  std::atomic<uint64_t> packed_bytes_{0};
  std::atomic<uint64_t> evictions_{0};
  std::atomic<uint64_t> released_since_trim_{0};  // JSON bytes freed since malloc_trim
  // The limits the shards' next_sweep were computed for.
  Mutex sweep_mu_;
  std::chrono::nanoseconds swept_pack_after_ SKIFF_GUARDED_BY(sweep_mu_){-1};
  std::chrono::nanoseconds swept_evict_after_ SKIFF_GUARDED_BY(sweep_mu_){-1};
};

}  // namespace skiff::server::internal

#endif  // SKIFF_SERVER_INTERNAL_DOCUMENT_CACHE_H_
