// Ownership: which instance of a cluster serves which partition, with
// leases and fencing, kept in PostgreSQL (the only coordinator).
//
// Tables (created when missing): skiff_cluster_instances (one row per
// running instance, its address for peers) and skiff_partitions (partition,
// owner, epoch, lease_until). An instance registers, holds a session
// advisory lock named by its id for as long as it runs, and every tick on its
// own connection:
//   - renews the leases of the partitions it owns (lease_until from
//     PostgreSQL's clock); the local lease timer starts when the renewal is
//     sent, so it always ends before PostgreSQL's;
//   - reads who owns what, and which instances are alive (their advisory
//     lock is held: a killed instance's is released when its backend goes,
//     so failover does not wait for the lease);
//   - claims free, expired or dead partitions up to its fair share
//     (ceil(partitions / live instances)), each claim raising the epoch;
//   - gives partitions above its fair share back when another instance
//     wants them, after the writes in flight are in (drain).
// A partition is served locally only while its local lease timer runs.
// Every write transaction checks the (owner, epoch) it was admitted under
// (WriteBatch's fence), so an owner that lost a partition commits nothing.
// Claims and releases lock the partition rows FOR UPDATE, which waits for
// write transactions holding them FOR KEY SHARE; renewals do not.
//
// Thread-safe: RouteOf and LeaseOf are lock-free reads; hooks run on the
// ownership thread.
#ifndef SKIFF_SERVER_CLUSTER_OWNERSHIP_H_
#define SKIFF_SERVER_CLUSTER_OWNERSHIP_H_

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "base/logger.h"
#include "base/mutex.h"
#include "base/status.h"
#include "server/cluster/partition.h"
#include "store/postgres_leases.h"

namespace skiff::server::cluster {

struct OwnershipOptions {
  std::string store_url;  // postgres://...; the store's own parameters allowed
  std::chrono::milliseconds lease{3000};
  std::chrono::milliseconds tick{200};
  Logger* logger = nullptr;  // required: where failed ticks are reported; outlives the Ownership
  const Clock* clock = nullptr;  // required: the local lease timers' time; outlives the Ownership
};

// Where a request for a partition goes.
struct Route {
  enum class Kind {
    kLocal,   // served here, under `lease`
    kRemote,  // forwarded to `owner`
    kNone,    // no owner right now (being handed over): try again shortly
  };
  Kind kind = Kind::kNone;
  Lease lease;  // kLocal
  uint64_t owner = 0;
};

class Ownership {
 public:
  struct Hooks {
    // Partitions this instance starts or stops serving: cached copies of
    // their documents must go (another instance may write them meanwhile).
    // Runs before the gained partitions are served.
    std::function<void(const std::vector<uint32_t>& partitions)> forget;
    // Partitions this instance is about to serve, after `forget`: what it
    // keeps of them beyond cached copies is read again from the store. An
    // error gives them back unserved (the tick fails).
    std::function<Status(const std::vector<uint32_t>& partitions)> load;
    // Blocks until every write admitted so far is in the store or failed.
    std::function<void()> drain;
    // The live instances other than this one, by id, with their addresses.
    std::function<void(const std::map<uint64_t, std::string>& peers)> peers;
  };

  // Serves nothing until Start.
  Ownership(const OwnershipOptions& options, Hooks hooks);
  ~Ownership();  // Stop()
  Ownership(const Ownership&) = delete;
  Ownership& operator=(const Ownership&) = delete;

  // Connects, creates the tables, registers as reachable at `address`
  // (host:port) and claims a first share before returning (so a lone
  // instance serves everything at once), then keeps the leases on a thread.
  Status Start(const std::string& address);

  Route RouteOf(uint32_t partition) const;
  // The lease of a partition served here now; nullopt otherwise.
  std::optional<Lease> LeaseOf(uint32_t partition) const;
  // Partitions served here now.
  size_t served() const;
  // Who serves each partition now, by owner (this instance under its own
  // id), few owners first to last; nullopt while some partition has none.
  // One look at the clock for the whole table.
  std::optional<std::vector<std::pair<uint64_t, PartitionSet>>> Shares() const;
  // Whether every partition of `set` is served here now.
  bool ServesAll(const PartitionSet& set) const;
  uint64_t id() const { return id_.load(std::memory_order_acquire); }

  // Stops serving, drains, gives every partition back and unregisters, so
  // the others take over at once. Idempotent.
  void Stop();

 private:
  Status Connect();
  Status Tick();
  void Run();
  void DropAll();
  int64_t Now() const;

  const OwnershipOptions options_;
  std::string address_;  // set by Start
  const Hooks hooks_;
  std::unique_ptr<store::PostgresLeases> leases_;  // the ownership thread's
  std::atomic<uint64_t> id_{0};
  std::array<std::atomic<uint64_t>, kPartitions> owner_{};
  std::array<std::atomic<uint64_t>, kPartitions> epoch_{};
  std::array<std::atomic<int64_t>, kPartitions> deadline_{};  // steady ns; 0 = not served here
  std::map<uint64_t, std::string> last_peers_;                // ownership thread only

  Mutex mu_;
  CondVar cv_;
  bool stopping_ SKIFF_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace skiff::server::cluster

#endif  // SKIFF_SERVER_CLUSTER_OWNERSHIP_H_
