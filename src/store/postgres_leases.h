// PostgresLeases: the PostgreSQL side of cluster ownership (docs/cluster.md),
// one instance's session with the coordinator tables. The server's Ownership
// decides what to renew, claim and give back; this class says it to
// PostgreSQL, one statement per call, so the server sends no SQL of its own.
//
// Tables (created when missing): skiff_cluster_instances (one row per running
// instance, its address for peers) and skiff_partitions (partition, owner,
// epoch, lease_until), which PostgresStore's fenced writes check. An
// instance is alive while its session holds an advisory lock named by its
// id: a killed instance's lock goes with its backend, so the others see it
// dead at once. Lease times are PostgreSQL's (now()), never a local clock.
//
// The session never reconnects by itself: a new session would not hold the
// lock. Once intact() is false the instance must stop serving and register
// again as a new one.
//
// Not thread-safe: one thread (the ownership thread) makes every call.
#ifndef SKIFF_STORE_POSTGRES_LEASES_H_
#define SKIFF_STORE_POSTGRES_LEASES_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"

namespace skiff::store {

// An instance of the cluster, as its row and its lock say.
struct ClusterInstance {
  uint64_t id = 0;
  std::string address;  // host:port, for peers
  bool alive = false;   // its lock is held and it beat within a lease
};

// A partition's row.
struct PartitionLease {
  uint32_t partition = 0;
  uint64_t owner = 0;      // 0: none
  bool unexpired = false;  // lease_until is after PostgreSQL's now()
};

class PostgresLeases {
 public:
  // Connects to the store at `store_url` (postgres://..., the store's own
  // parameters allowed; its statement and lock timeouts are SET on the
  // session), creates the tables with partitions 0..partitions-1, takes a
  // new instance id with its lock, and registers it as reachable at
  // `address`. unavailable (bad_request for a URL that does not parse) when
  // any of it fails.
  static Result<std::unique_ptr<PostgresLeases>> Register(const std::string& store_url,
                                                          uint32_t partitions,
                                                          const std::string& address);
  ~PostgresLeases();
  PostgresLeases(const PostgresLeases&) = delete;
  PostgresLeases& operator=(const PostgresLeases&) = delete;

  // This instance's id (never 0).
  uint64_t id() const;
  // False once the session was lost or replaced: the lock is gone, and the
  // others may already be taking this instance's partitions.
  bool intact() const;

  // Every call below is one statement; a failure is a Status naming the
  // step, and changes nothing that the statement did not commit.

  // Extends the lease of every partition this instance owns to now() +
  // `lease`. Returns them with their epochs.
  Result<std::map<uint32_t, uint64_t>> Renew(std::chrono::milliseconds lease);
  // Stamps this instance's heartbeat: a frozen instance keeps its lock but
  // stops beating.
  Status Beat();
  // Every registered instance; alive ones beat within `lease`.
  Result<std::vector<ClusterInstance>> Instances(std::chrono::milliseconds lease);
  // Deletes the rows of instances whose lock is gone.
  Status ForgetGone();
  // Every partition's row.
  Result<std::vector<PartitionLease>> Partitions();
  // Takes those of `partitions` that are claimable (no owner, an expired
  // lease, or a dead owner) and not locked by a write in flight, raising
  // their epochs. Returns the partitions taken with their new epochs, in
  // PostgreSQL's order.
  Result<std::vector<std::pair<uint32_t, uint64_t>>> Claim(const std::vector<uint32_t>& partitions,
                                                           std::chrono::milliseconds lease);
  // Gives back those of `partitions` this instance owns, after the writes
  // fenced on them are in.
  Status Release(const std::vector<uint32_t>& partitions);
  // Gives back every partition this instance owns. Returns PostgreSQL's
  // time of the release (text), for AllBeatSince.
  Result<std::string> ReleaseAll();
  // Whether every other live instance (beating within `lease`) has beaten
  // after `since`, a time DatabaseTime or ReleaseAll returned.
  Result<bool> AllBeatSince(const std::string& since, std::chrono::milliseconds lease);
  // PostgreSQL's current time (clock_timestamp(), text).
  Result<std::string> DatabaseTime();
  // Deletes this instance's row; its lock ends with the session.
  Status Unregister();

 private:
  struct Session;
  explicit PostgresLeases(std::unique_ptr<Session> session);

  std::unique_ptr<Session> session_;
};

}  // namespace skiff::store

#endif  // SKIFF_STORE_POSTGRES_LEASES_H_
