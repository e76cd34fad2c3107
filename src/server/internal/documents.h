// Documents: the server's one write path per key, and its reads.
//
// Owns the documents in memory (DocumentCache), the group commit
// (Committer), the tier sweeper and the durability policy, so that what
// happens when a key is written is one function, Write: check that the
// write may go ahead, apply the change in the key's total order, queue the
// result for the store, and acknowledge it when the policy says so, the tier
// counts following on their own (leveldb's DBImpl::Write holds the writer
// queue, grouping and the sync choice together the same way). A step added
// to every write has one place here:
//   - may it go ahead (the memory-durability backlog bound; the cluster
//     ownership check): Admit(), before the change;
//   - what else must follow the document (the table's geo index):
//     AfterChange(), under the key's lock, right after the change; a write
//     that failed for good puts the index back to what the store holds;
//   - what the store gets and when the client hears: Persist();
//   - what watches see (WatchHub::Publish): in commit durability on the
//     committer's thread once the transaction committed, after the
//     writer's acknowledgement; in memory durability under the key's lock
//     as the change is applied (what the writer is told), delivered once
//     the lock is let go.
//
// Durability kCommit acknowledges a write once its transaction committed
// (on the committer's thread); kMemory once applied (before Write returns),
// the store getting it within the flush interval.
// All methods are thread-safe.
#ifndef SKIFF_SERVER_INTERNAL_DOCUMENTS_H_
#define SKIFF_SERVER_INTERNAL_DOCUMENTS_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "base/mutex.h"
#include "base/status.h"
#include "server/cluster/ownership.h"
#include "server/internal/cached_document.h"
#include "server/internal/committer.h"
#include "server/internal/document_cache.h"
#include "server/internal/geo_indexes.h"
#include "server/internal/watch_hub.h"
#include "server/server_options.h"
#include "store/store.h"

namespace skiff::server::internal {

// How a write finds its document: kReplace replaces it whatever it was
// (set: an old value is never read from the store); kModify reads it first
// (delete, add, merge).
enum class WriteKind { kReplace, kModify };

// What a change reports: whether it changed the document (a delete of an
// absent key does not, and is acknowledged at once without a write).
enum class Changed { kNo, kYes };

struct DocumentsOptions {
  Durability durability = Durability::kCommit;
  std::chrono::milliseconds flush_interval{100};
  std::chrono::milliseconds pack_after{0};
  std::chrono::milliseconds evict_after{0};
  size_t shards = 256;
  // Memory durability: writes acknowledged but not yet in the store are
  // bounded; past either bound new writes get unavailable until the store
  // takes the backlog.
  size_t max_unflushed_bytes = 64 * 1024 * 1024;
  std::chrono::milliseconds max_unflushed_age{std::chrono::seconds(10)};
  // How long Stop keeps retrying a failing flush before it gives up.
  std::chrono::milliseconds stop_grace{std::chrono::seconds(30)};
  // Cluster mode: writes are admitted only for partitions this serves now,
  // and commit under their lease (fencing). Outlives the Documents.
  const cluster::Ownership* ownership = nullptr;
  // Watches: their history and bounds (watch_hub.h).
  WatchOptions watch;
};

class Documents {
 public:
  Documents(store::Store& store, const Clock& clock, const DocumentsOptions& options);
  ~Documents();  // Stop()
  Documents(const Documents&) = delete;
  Documents& operator=(const Documents&) = delete;

  // Runs fn(const CachedDocument&) on (table, key) in its order, reading it
  // from the store when it is not in memory. With `resident` given, a
  // document not in memory is not read: *resident turns false and fn is
  // not called (the caller reads it on a thread that may block). Returns
  // the store's error when loading fails.
  template <typename Fn>
  Status Read(std::string_view table, std::string_view key, Fn&& fn, bool* resident = nullptr) {
    return cache_.Access(
        table, key, resident ? AccessMode::kResidentOnly : AccessMode::kLoad,
        [&](CachedDocument& doc) { fn(static_cast<const CachedDocument&>(doc)); }, resident);
  }

  // The write path. Runs change(CachedDocument&) -> Result<Changed> on
  // (table, key) in its order. An error from it changes nothing and is
  // Write's result; so is a refusal by Admit (unavailable, or moved). Once the
  // document changed, its new form is queued for the store, and `ack` hears
  // of it when the policy allows: ack.Later() first when that will be on
  // the committer's thread (ack is then moved there), then ack(status)
  // exactly once, with the store's error if the transaction failed (the
  // cached copy is then dropped so the next read sees the store). A change
  // that changed nothing is acknowledged at once. `resident` as for Read
  // (kModify only).
  template <typename ChangeFn, typename Ack>
  Status Write(std::string_view table, std::string_view key, WriteKind kind, ChangeFn&& change,
               Ack ack, bool* resident = nullptr);

  // Blocks until every write applied before the call is in the store (or
  // failed); returns the error of the attempt that ended the wait.
  Status Flush();

  // Writes what is queued (retrying a failing flush for stop_grace in
  // memory durability) and stops the threads. Returns an error that names
  // what could not be written when acknowledged writes were lost.
  // Idempotent.
  Status Stop();

  // Reads the geo catalog and builds the indexes; before the first write.
  Status LoadGeoIndexes() { return geo_.Load(store_, clock_); }
  const GeoIndexes& geo() const { return geo_; }
  GeoIndexes& geo() { return geo_; }

  // Drops the cached copies of every document in `partitions` (ones this
  // instance starts or stops serving).
  void Forget(const std::vector<uint32_t>& partitions);
  // Reads again what this instance keeps of `partitions` beyond cached
  // copies, before it starts serving them: their points in the geo
  // indexes, which other instances moved while they served them. The
  // store's error when it cannot be read (then they must not be served).
  Status LoadPartitions(const std::vector<uint32_t>& partitions);
  // Cluster mode, once partitions stopped being served: blocks until every
  // write admitted before is in the store or failed, so they can be handed
  // over with nothing of theirs still to commit.
  void Drain();

  WatchHub& watches() { return watches_; }
  const WatchHub& watches() const { return watches_; }

  TierStats tiers() const { return cache_.stats(); }
  CommitterCounters commits() const { return committer_.counters(); }

 private:
  // What Admit grants a write: the lease it commits under (cluster mode),
  // and, until it is queued, its place among the writes Drain waits out.
  class Admission {
   public:
    Admission() = default;
    explicit Admission(std::atomic<int>* admitting) : admitting_(admitting) {
      admitting_->fetch_add(1);  // seq_cst: see Drain
    }
    Admission(Admission&& other) noexcept
        : lease(other.lease), admitting_(std::exchange(other.admitting_, nullptr)) {}
    Admission& operator=(Admission&&) = delete;
    ~Admission() {
      if (admitting_ != nullptr) admitting_->fetch_sub(1);
    }

    std::optional<cluster::Lease> lease;

   private:
    std::atomic<int>* admitting_ = nullptr;
  };

  // May a write go ahead? unavailable while memory durability's backlog is
  // over its bounds (the store is not taking writes); moved in cluster mode
  // when this instance does not serve the key's partition now (the caller
  // routes it again); else what the write goes ahead under.
  Result<Admission> Admit(std::string_view table, std::string_view key);
  // What follows each change of a document, under the key's lock: the
  // table's geo index.
  void AfterChange(std::string_view table, std::string_view key, const CachedDocument& doc) {
    geo_.Follow(table, key, doc);
  }
  // Write number `seq` of (table, key) failed for good: the cache drops its
  // copy, and under the same lock the geo index takes the store's position
  // (or none), so it never keeps one the store did not get.
  void WriteFailed(const std::string& table, const std::string& key, uint64_t seq);
  // The JSON text the store gets for `doc` (nullopt: delete). A tree is
  // serialised, and its byte count updated.
  static std::optional<std::string> StoredText(CachedDocument& doc);
  // Queues the changed document and numbers the write; in commit mode the
  // acknowledgement rides on it.
  template <typename Ack>
  void Persist(std::string_view table, std::string_view key, CachedDocument& doc, Ack& ack,
               const std::optional<cluster::Lease>& lease);
  void StartSweeper();
  void StopSweeper();

  const DocumentsOptions options_;
  store::Store& store_;
  const Clock& clock_;
  GeoIndexes geo_;
  // Cluster mode: writes between their admission and their queueing, which
  // Drain waits out before it flushes.
  std::atomic<int> admitting_{0};
  DocumentCache cache_;
  Committer committer_;
  WatchHub watches_;

  std::thread sweeper_;
  Mutex sweep_mu_;
  CondVar sweep_cv_;
  bool sweep_stop_ SKIFF_GUARDED_BY(sweep_mu_) = false;
  Mutex stop_mu_;
  bool stopped_ SKIFF_GUARDED_BY(stop_mu_) = false;
  Status stop_status_ SKIFF_GUARDED_BY(stop_mu_);
};

template <typename ChangeFn, typename Ack>
Status Documents::Write(std::string_view table, std::string_view key, WriteKind kind,
                        ChangeFn&& change, Ack ack, bool* resident) {
  // Held until the write is queued.
  SKIFF_ASSIGN_OR_RETURN(const Admission admission, Admit(table, key));
  Status refused;
  bool changed = false;
  bool published = false;
  const AccessMode mode = kind == WriteKind::kReplace ? AccessMode::kReplace
                          : resident                  ? AccessMode::kResidentOnly
                                                      : AccessMode::kLoad;
  SKIFF_RETURN_IF_ERROR(cache_.Access(
      table, key, mode,
      [&](CachedDocument& doc) {
        Result<Changed> c = change(doc);
        if (!c.ok()) {
          refused = c.status();
          return;
        }
        if (*c == Changed::kNo) return;
        changed = true;
        AfterChange(table, key, doc);
        Persist(table, key, doc, ack, admission.lease);
        if (options_.durability == Durability::kMemory && watches_.Records(table)) {
          // Numbered under the key's lock, so in the key's order.
          std::optional<std::string> text = StoredText(doc);
          watches_.Publish(table, key,
                           text ? std::optional<std::string_view>(*text) : std::nullopt);
          published = true;
        }
      },
      kind == WriteKind::kReplace ? nullptr : resident));
  if (resident && !*resident) return Status::Ok();
  if (!refused.ok()) return refused;
  // Acknowledged now unless the committer will (commit mode); after the
  // key's lock, so no reply is sent under it.
  if (!changed || options_.durability == Durability::kMemory) ack(Status::Ok());
  if (published) watches_.Deliver();
  return Status::Ok();
}

template <typename Ack>
void Documents::Persist(std::string_view table, std::string_view key, CachedDocument& doc, Ack& ack,
                        const std::optional<cluster::Lease>& lease) {
  if (options_.durability == Durability::kMemory) {
    // Acknowledged already, and a failed flush is retried until it lands.
    // While a WriteLatest write of the key is still queued it will read
    // this change too (we hold the key's shard lock, which its read takes).
    if (doc.latest_write > committer_.taken()) return;
    if (std::holds_alternative<TreeForm>(doc.form)) {
      // add and merge: the committer serialises the document when it
      // writes it, so a key changed many times between flushes is
      // serialised once.
      doc.last_write = doc.latest_write =
          committer_.WriteLatest(std::string(table), std::string(key));
    } else {
      doc.last_write =
          committer_.Write(std::string(table), std::string(key), StoredText(doc), nullptr);
    }
    return;
  }
  ack.Later();
  std::optional<std::string> text = StoredText(doc);
  // Watches get the value once committed; copied only for a watched table.
  const bool watched = watches_.Records(table);
  std::optional<std::string> seen = watched ? text : std::nullopt;
  doc.last_write = committer_.Write(
      std::string(table), std::string(key), std::move(text),
      [this, ack = std::move(ack), table = std::string(table), key = std::string(key), watched,
       seen = std::move(seen)](const Status& status, uint64_t seq) mutable {
        if (!status.ok()) WriteFailed(table, key, seq);
        ack(status);
        // After the writer's acknowledgement, on the committer's thread, in
        // commit order.
        if (status.ok() && watched) {
          watches_.Publish(table, key,
                           seen ? std::optional<std::string_view>(*seen) : std::nullopt);
          watches_.Deliver();
        }
      },
      lease);
}

}  // namespace skiff::server::internal

#endif  // SKIFF_SERVER_INTERNAL_DOCUMENTS_H_
