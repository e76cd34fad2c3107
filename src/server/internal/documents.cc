#include "server/internal/documents.h"

#include <algorithm>

namespace skiff::server::internal {

Documents::Documents(store::Store& store, const Clock& clock, const DocumentsOptions& options)
    : options_(options),
      store_(store),
      clock_(clock),
      cache_(store, clock, options.shards),
      committer_(store, clock, options.durability, options.flush_interval, options.stop_grace),
      watches_(options.watch) {
  // Memory mode's WriteLatest writes are read from the cache when
  // committed. The committer stops (Stop) before the cache it reads goes.
  committer_.set_latest(
      [this](std::string_view table, std::string_view key, std::optional<std::string>* text) {
        return cache_.LatestText(table, key, text);
      });
  StartSweeper();
}

Documents::~Documents() { (void)Stop(); }

Result<Documents::Admission> Documents::Admit(std::string_view table, std::string_view key) {
  if (options_.ownership != nullptr) {
    // Counted from before the lease is read, so Drain sees this write or
    // the write sees the lease withdrawn.
    Admission admission(&admitting_);
    admission.lease = options_.ownership->LeaseOf(cluster::PartitionOf(table, key));
    if (!admission.lease) {
      return Moved("this instance does not serve the key's partition right now");
    }
    return admission;
  }
  if (options_.durability != Durability::kMemory) return Admission();
  const CommitterBacklog b = committer_.backlog();
  const bool too_old = b.writes > 0 && b.oldest > options_.max_unflushed_age;
  if (b.bytes <= options_.max_unflushed_bytes && !too_old) return Admission();
  // Acknowledging more would promise what the store may never hold.
  return Unavailable(
      std::string(b.failing ? "the store is failing: " : "the store is behind: ") +
      std::to_string(b.writes) + " acknowledged writes (" + std::to_string(b.bytes) +
      " bytes, the oldest " +
      std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(b.oldest).count()) +
      " ms old) wait for it; new writes are refused until it takes them");
}

void Documents::Drain() {
  // Writes that read their lease before it was withdrawn are queued within
  // microseconds (they hold no lock that waits on anything). Sequentially
  // consistent on both sides (the count and the lease's deadline): a write
  // either sees the lease withdrawn or is seen here.
  while (admitting_.load() > 0) {
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  (void)Flush();
}

void Documents::Forget(const std::vector<uint32_t>& partitions) {
  std::vector<bool> drop(cluster::kPartitions, false);
  for (uint32_t p : partitions) drop[p] = true;
  cache_.DropIf([&](std::string_view table, std::string_view key) {
    return drop[cluster::PartitionOf(table, key)];
  });
}

Status Documents::LoadPartitions(const std::vector<uint32_t>& partitions) {
  std::vector<bool> load(cluster::kPartitions, false);
  for (uint32_t p : partitions) load[p] = true;
  return geo_.Reload(store_, [&](std::string_view table, std::string_view key) {
    return load[cluster::PartitionOf(table, key)];
  });
}

std::optional<std::string> Documents::StoredText(CachedDocument& doc) {
  if (const auto* text = std::get_if<TextForm>(&doc.form)) return text->json;
  if (auto* tree = std::get_if<TreeForm>(&doc.form)) {
    std::string json = doc::Dump(tree->tree);
    tree->json_bytes = json.size();
    return json;
  }
  return std::nullopt;
}

void Documents::WriteFailed(const std::string& table, const std::string& key, uint64_t seq) {
  if (!geo_.Has(table)) return cache_.WriteFailed(table, key, seq, nullptr);
  // What the store holds now, read before the key's lock is taken (a
  // failing store may be slow to answer, and an I/O thread may want the
  // shard meanwhile). It is used only if write `seq` is still the key's
  // last: a later write has put its own position in the index already.
  const Result<std::optional<std::string>> stored = store_.Get(table, key);
  cache_.WriteFailed(table, key, seq, [&] { geo_.FollowStored(table, key, stored); });
}

Status Documents::Flush() { return committer_.Flush(); }

Status Documents::Stop() {
  MutexLock lock(&stop_mu_);
  if (stopped_) return stop_status_;
  stopped_ = true;
  StopSweeper();
  stop_status_ = committer_.Stop();
  return stop_status_;
}

// Moves idle documents down the tiers. Both the wait between passes and
// idleness are measured on the Clock, so tests drive the sweep by hand.
void Documents::StartSweeper() {
  using std::chrono::milliseconds;
  const auto pack = options_.pack_after.count() > 0 ? options_.pack_after : options_.evict_after;
  const auto evict = options_.evict_after.count() > 0 ? options_.evict_after : options_.pack_after;
  if (pack.count() <= 0 && evict.count() <= 0) return;
  const milliseconds period =
      std::clamp<milliseconds>(std::min(pack, evict) / 4, milliseconds(5), milliseconds(1000));
  sweeper_ = std::thread([this, period] {
    MutexLock lock(&sweep_mu_);
    while (!sweep_stop_) {
      const Clock::TimePoint deadline = clock_.Now() + period;
      while (!sweep_stop_ && clock_.WaitUntil(sweep_cv_, sweep_mu_, deadline)) {
      }
      if (sweep_stop_) break;
      lock.Unlock();
      cache_.Sweep(options_.pack_after, options_.evict_after, committer_.written());
      lock.Lock();
    }
  });
}

void Documents::StopSweeper() {
  {
    MutexLock lock(&sweep_mu_);
    sweep_stop_ = true;
  }
  sweep_cv_.SignalAll();
  if (sweeper_.joinable()) sweeper_.join();
}

}  // namespace skiff::server::internal
