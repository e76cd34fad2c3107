#include "server/cluster/ownership.h"

#include <algorithm>
#include <set>
#include <utility>

namespace skiff::server::cluster {

Ownership::Ownership(const OwnershipOptions& options, Hooks hooks)
    : options_(options), hooks_(std::move(hooks)) {}

Ownership::~Ownership() { Stop(); }

int64_t Ownership::Now() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             options_.clock->Now().time_since_epoch())
      .count();
}

Status Ownership::Start(const std::string& address) {
  address_ = address;
  SKIFF_RETURN_IF_ERROR(Connect());
  SKIFF_RETURN_IF_ERROR(Tick());
  thread_ = std::thread([this] { Run(); });
  return Status::Ok();
}

Status Ownership::Connect() {
  SKIFF_ASSIGN_OR_RETURN(
      leases_, store::PostgresLeases::Register(options_.store_url, kPartitions, address_));
  id_.store(leases_->id(), std::memory_order_release);
  return Status::Ok();
}

Route Ownership::RouteOf(uint32_t partition) const {
  Route r;
  const uint64_t owner = owner_[partition].load(std::memory_order_acquire);
  if (owner == 0) return r;
  if (owner == id()) {
    if (deadline_[partition].load() <= Now()) return r;
    r.kind = Route::Kind::kLocal;
    r.lease = {owner, epoch_[partition].load(std::memory_order_acquire)};
    return r;
  }
  r.kind = Route::Kind::kRemote;
  r.owner = owner;
  return r;
}

std::optional<Lease> Ownership::LeaseOf(uint32_t partition) const {
  Route r = RouteOf(partition);
  if (r.kind != Route::Kind::kLocal) return std::nullopt;
  return r.lease;
}

std::optional<std::vector<std::pair<uint64_t, PartitionSet>>> Ownership::Shares() const {
  const uint64_t me = id();
  const int64_t now = Now();
  std::vector<std::pair<uint64_t, PartitionSet>> shares;
  size_t last = 0;
  for (uint32_t p = 0; p < kPartitions; ++p) {
    const uint64_t owner = owner_[p].load(std::memory_order_acquire);
    if (owner == 0 || (owner == me && deadline_[p].load() <= now)) return std::nullopt;
    if (last >= shares.size() || shares[last].first != owner) {
      last = 0;
      while (last < shares.size() && shares[last].first != owner) ++last;
      if (last == shares.size()) shares.emplace_back(owner, PartitionSet());
    }
    shares[last].second.set(p);
  }
  return shares;
}

bool Ownership::ServesAll(const PartitionSet& set) const {
  const uint64_t me = id();
  const int64_t now = Now();
  for (uint32_t p = 0; p < kPartitions; ++p) {
    if (set[p] && (owner_[p].load(std::memory_order_acquire) != me || deadline_[p].load() <= now)) {
      return false;
    }
  }
  return true;
}

size_t Ownership::served() const {
  size_t n = 0;
  for (uint32_t p = 0; p < kPartitions; ++p) n += LeaseOf(p).has_value();
  return n;
}

void Ownership::DropAll() {
  std::vector<uint32_t> dropped;
  const uint64_t me = id();
  for (uint32_t p = 0; p < kPartitions; ++p) {
    deadline_[p].store(0);
    if (owner_[p].load() == me) dropped.push_back(p);
    owner_[p].store(0, std::memory_order_release);
  }
  if (!dropped.empty() && hooks_.forget) hooks_.forget(dropped);
}

Status Ownership::Tick() {
  const uint64_t me = id();
  const int64_t sent = Now();
  const int64_t lease_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(options_.lease).count();
  if (!leases_->intact()) return Unavailable("cluster: the PostgreSQL session was replaced");
  // Renew first: the local timers start at `sent`, before PostgreSQL's.
  SKIFF_ASSIGN_OR_RETURN(auto mine, leases_->Renew(options_.lease));
  // Alive: its advisory lock is held and it has renewed within a lease.
  // A frozen instance keeps its lock (its session stays open) but stops
  // beating, so it gets no share until it comes back.
  SKIFF_RETURN_IF_ERROR(leases_->Beat());
  std::set<uint64_t> alive;
  std::map<uint64_t, std::string> peers;
  SKIFF_ASSIGN_OR_RETURN(const std::vector<store::ClusterInstance> instances,
                         leases_->Instances(options_.lease));
  for (const store::ClusterInstance& instance : instances) {
    if (!instance.alive) continue;
    alive.insert(instance.id);
    if (instance.id != me) peers[instance.id] = instance.address;
  }
  // Rows of instances that are gone, so the table does not grow with
  // every restart.
  SKIFF_RETURN_IF_ERROR(leases_->ForgetGone());
  std::vector<uint32_t> claimable;  // free ones, then orphans (dead or expired owner)
  std::vector<uint32_t> orphans;
  std::map<uint64_t, size_t> held;  // live owners' partition counts
  std::vector<std::pair<uint32_t, uint64_t>> others;
  SKIFF_ASSIGN_OR_RETURN(const std::vector<store::PartitionLease> rows, leases_->Partitions());
  for (const store::PartitionLease& row : rows) {
    const uint32_t p = row.partition;
    const uint64_t owner = row.owner;
    const bool live = row.unexpired && alive.count(owner) > 0;
    if (owner == me) continue;
    if (live) {
      ++held[owner];
      others.emplace_back(p, owner);
    } else {
      (owner == 0 ? claimable : orphans).push_back(p);
      others.emplace_back(p, 0);
    }
  }
  const size_t live_instances = std::max<size_t>(alive.size(), 1);
  const size_t fair = (kPartitions + live_instances - 1) / live_instances;

  const bool nothing_free = claimable.empty() && orphans.empty();
  std::vector<uint32_t> gained;
  // Free partitions up to the fair share; orphans always, whatever the
  // share (their owner may still count as alive: frozen, with its session
  // open), so none stays unserved; the shares even out afterwards.
  if (!claimable.empty() && mine.size() + orphans.size() < fair) {
    // Spread over the range so instances starting together claim
    // different rows first.
    std::rotate(claimable.begin(),
                claimable.begin() + static_cast<std::ptrdiff_t>((me * 389) % claimable.size()),
                claimable.end());
    claimable.resize(std::min(claimable.size(), fair - mine.size() - orphans.size()));
  } else {
    claimable.clear();
  }
  claimable.insert(claimable.end(), orphans.begin(), orphans.end());
  if (!claimable.empty()) {
    // A row still locked by a write of its old owner (a frozen one's
    // transaction) is skipped, not waited for: the tick must go on.
    SKIFF_ASSIGN_OR_RETURN(const auto claimed, leases_->Claim(claimable, options_.lease));
    for (const auto& [p, epoch] : claimed) {
      mine[p] = epoch;
      gained.push_back(p);
    }
  }

  // Give back what is above the fair share when another instance is
  // below it and nothing is free for it.
  std::vector<uint32_t> released;
  const bool someone_short =
      nothing_free && std::any_of(alive.begin(), alive.end(),
                                  [&](uint64_t id) { return id != me && held[id] < fair - 1; });
  if (someone_short && mine.size() > fair) {
    size_t extra = mine.size() - fair;
    for (auto it = mine.rbegin(); it != mine.rend() && extra > 0; ++it, --extra) {
      released.push_back(it->first);
    }
    for (uint32_t p : released) {
      deadline_[p].store(0);
      mine.erase(p);
    }
    if (hooks_.drain) hooks_.drain();
    SKIFF_RETURN_IF_ERROR(leases_->Release(released));
  }

  // Publish: what was lost or given back stops first, cached copies of
  // what is new go before it is served.
  std::vector<uint32_t> forget = released;
  for (uint32_t p = 0; p < kPartitions; ++p) {
    if (owner_[p].load() == me && mine.count(p) == 0 &&
        std::find(released.begin(), released.end(), p) == released.end()) {
      deadline_[p].store(0);
      forget.push_back(p);
    }
  }
  for (uint32_t p : gained) forget.push_back(p);
  if (!forget.empty() && hooks_.forget) hooks_.forget(forget);
  if (!gained.empty() && hooks_.load) {
    if (Status s = hooks_.load(gained); !s.ok()) {
      for (uint32_t p : gained) mine.erase(p);
      // Claimed but never served: back to whoever comes next (this
      // instance included, at a later tick).
      SKIFF_RETURN_IF_ERROR(leases_->Release(gained));
      return Status(s.code(), "cluster: partitions taken over could not be loaded: " + s.message());
    }
  }
  for (const auto& [p, owner] : others) {
    if (mine.count(p)) continue;
    deadline_[p].store(0);
    owner_[p].store(owner, std::memory_order_release);
  }
  for (uint32_t p : released) owner_[p].store(0, std::memory_order_release);
  for (const auto& [p, epoch] : mine) {
    epoch_[p].store(epoch, std::memory_order_release);
    owner_[p].store(me, std::memory_order_release);
    deadline_[p].store(sent + lease_ns, std::memory_order_release);
  }
  if (peers != last_peers_ && hooks_.peers) hooks_.peers(peers);
  last_peers_ = std::move(peers);
  return Status::Ok();
}

void Ownership::Run() {
  for (;;) {
    {
      MutexLock lock(&mu_);
      if (stopping_) return;
      cv_.WaitFor(mu_, options_.tick);
      if (stopping_) return;
    }
    Status s = leases_ ? Tick() : Connect();
    if (!s.ok()) {
      std::string_view what = s.message();  // worded for Start's caller: "cluster: ..."
      if (what.starts_with("cluster: ")) what.remove_prefix(9);
      options_.logger->Log(LogLevel::kError, "cluster", what);
      // A broken connection released our advisory lock: the others may
      // already be taking our partitions. Stop serving them and register
      // again as a new instance.
      if (leases_ && !leases_->intact()) {
        DropAll();
        leases_.reset();
      }
      // Leases simply run out locally when renewals keep failing.
    }
  }
}

void Ownership::Stop() {
  {
    MutexLock lock(&mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  cv_.SignalAll();
  if (thread_.joinable()) thread_.join();
  for (uint32_t p = 0; p < kPartitions; ++p) deadline_[p].store(0);
  if (hooks_.drain) hooks_.drain();
  if (!leases_) return;
  auto give_back = [&]() -> Status {
    SKIFF_ASSIGN_OR_RETURN(std::string released, leases_->ReleaseAll());
    // Peers keep forwarding here until their next tick reads the release;
    // this instance still answers those (moved) while it waits. Two
    // heartbeats of every live peer after the release mean each has read
    // it and acted on it (a tick beats, then reads, then publishes), so
    // closing the links after that drops nothing in flight. Bounded by
    // two leases, for a peer that is frozen.
    const auto give_up = options_.clock->Now() + 2 * options_.lease;
    for (int beats_seen = 0; beats_seen < 2 && options_.clock->Now() < give_up;) {
      std::this_thread::sleep_for(options_.tick);
      SKIFF_ASSIGN_OR_RETURN(const bool all_beat, leases_->AllBeatSince(released, options_.lease));
      if (all_beat) {
        ++beats_seen;
        SKIFF_ASSIGN_OR_RETURN(released, leases_->DatabaseTime());
      }
    }
    return leases_->Unregister();
  };
  if (Status given_back = give_back(); !given_back.ok()) {
    std::string what = given_back.message();  // "cluster: <step> failed: ..."
    if (what.starts_with("cluster: ")) what.erase(0, 9);
    Logf(*options_.logger, LogLevel::kError, "cluster",
         "giving partitions back failed (they expire): %s", what.c_str());
  }
  leases_.reset();
}

}  // namespace skiff::server::cluster
