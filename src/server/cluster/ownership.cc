#include "server/cluster/ownership.h"

#include <algorithm>
#include <cstdio>
#include <set>
#include <utility>

#include <pqxx/pqxx>

#include "store/internal/pg_array.h"
#include "store/internal/pg_url.h"

namespace skiff::server::cluster {
namespace {

// Created under a transaction-scoped advisory lock, so instances starting
// together do not race each other's CREATE.
constexpr const char* kSchema = R"sql(
SELECT pg_advisory_xact_lock(7283515);
CREATE TABLE IF NOT EXISTS skiff_cluster_instances(
  id bigserial PRIMARY KEY,
  address text NOT NULL,
  started timestamptz NOT NULL DEFAULT now(),
  heartbeat timestamptz NOT NULL DEFAULT now());
CREATE TABLE IF NOT EXISTS skiff_partitions(
  partition int PRIMARY KEY,
  owner bigint,
  epoch bigint NOT NULL DEFAULT 0,
  lease_until timestamptz);
)sql";

// Ids of the instances whose advisory lock is held: the ones alive. The
// lock's first key is the schema's hash, so clusters in two schemas of one
// database never see each other's instances.
constexpr const char* kAliveIds =
    "SELECT l.objid::bigint FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted "
    "AND l.objsubid = 2 AND l.classid = hashtext(current_schema())::oid "
    "AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())";

// A partition anyone may claim: no owner, an expired lease, or a dead owner.
const std::string kClaimable =
    std::string("(owner IS NULL OR lease_until < now() OR owner NOT IN (") + kAliveIds + "))";

std::string PartitionArray(const std::vector<uint32_t>& partitions) {
  std::vector<std::string> text;
  text.reserve(partitions.size());
  for (uint32_t p : partitions) text.push_back(std::to_string(p));
  return store::internal::PgArrayOf(
      text, [](const std::string& s) { return std::optional<std::string_view>(s); });
}

}  // namespace

struct Ownership::Connection {
  explicit Connection(const std::string& url) : conn(url), backend(conn.backendpid()) {}
  pqxx::connection conn;
  // libpqxx reconnects a broken connection on its own, which would drop
  // the advisory lock unseen: a changed backend means we are not alive to
  // the others any more.
  const int backend;
};

Ownership::Ownership(const OwnershipOptions& options, Hooks hooks)
    : options_(options), hooks_(std::move(hooks)) {}

Ownership::~Ownership() { Stop(); }

int64_t Ownership::Now() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
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
  SKIFF_ASSIGN_OR_RETURN(store::internal::PgUrl url,
                         store::internal::ParsePgUrl(options_.store_url, {}));
  try {
    conn_ = std::make_unique<Connection>(url.libpq_url);
    pqxx::work tx(conn_->conn);
    tx.exec(kSchema);
    tx.exec("INSERT INTO skiff_partitions(partition) SELECT generate_series(0, " +
            std::to_string(kPartitions - 1) + ") ON CONFLICT DO NOTHING");
    tx.commit();
    pqxx::nontransaction nt(conn_->conn);
    nt.exec("SET statement_timeout = " + std::to_string(url.options.statement_timeout.count()) +
            "; SET lock_timeout = " + std::to_string(url.options.lock_timeout.count()));
    // The lock before the row: the others' ticks delete every row whose
    // lock is not held, which would otherwise catch this one in between.
    const uint64_t id =
        nt.exec("SELECT nextval(pg_get_serial_sequence('skiff_cluster_instances', 'id'))")[0][0]
            .as<uint64_t>();
    nt.exec_params("SELECT pg_advisory_lock(hashtext(current_schema()), $1::int)",
                   static_cast<long long>(id));
    nt.exec_params("INSERT INTO skiff_cluster_instances(id, address) VALUES ($1, $2)",
                   static_cast<long long>(id), address_);
    id_.store(id, std::memory_order_release);
  } catch (const std::exception& e) {
    conn_.reset();
    return Unavailable(std::string("cluster: cannot register with PostgreSQL: ") + e.what());
  }
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
  const std::string lease_text = std::to_string(options_.lease.count()) + " milliseconds";
  try {
    if (conn_->conn.backendpid() != conn_->backend) {
      return Unavailable("cluster: the PostgreSQL session was replaced");
    }
    pqxx::nontransaction tx(conn_->conn);
    // Renew first: the local timers start at `sent`, before PostgreSQL's.
    std::map<uint32_t, uint64_t> mine;
    for (const auto& row : tx.exec_params(
             "UPDATE skiff_partitions SET lease_until = now() + $2::interval WHERE owner = $1 "
             "RETURNING partition, epoch",
             static_cast<long long>(me), lease_text)) {
      mine[row[0].as<uint32_t>()] = row[1].as<uint64_t>();
    }
    // Alive: its advisory lock is held and it has renewed within a lease.
    // A frozen instance keeps its lock (its session stays open) but stops
    // beating, so it gets no share until it comes back.
    tx.exec_params("UPDATE skiff_cluster_instances SET heartbeat = now() WHERE id = $1",
                   static_cast<long long>(me));
    std::set<uint64_t> alive;
    std::map<uint64_t, std::string> peers;
    for (const auto& row :
         tx.exec_params(std::string("SELECT id, address, id IN (") + kAliveIds +
                            ") AND heartbeat > now() - $1::interval FROM skiff_cluster_instances",
                        lease_text)) {
      const uint64_t id = row[0].as<uint64_t>();
      if (!row[2].as<bool>()) continue;
      alive.insert(id);
      if (id != me) peers[id] = row[1].c_str();
    }
    // Rows of instances that are gone, so the table does not grow with
    // every restart.
    tx.exec(std::string("DELETE FROM skiff_cluster_instances WHERE id NOT IN (") + kAliveIds + ")");
    std::vector<uint32_t> claimable;  // free ones, then orphans (dead or expired owner)
    std::vector<uint32_t> orphans;
    std::map<uint64_t, size_t> held;  // live owners' partition counts
    std::vector<std::pair<uint32_t, uint64_t>> others;
    for (const auto& row : tx.exec(
             "SELECT partition, coalesce(owner, 0), lease_until > now() FROM skiff_partitions")) {
      const uint32_t p = row[0].as<uint32_t>();
      const uint64_t owner = row[1].as<uint64_t>();
      const bool live = !row[2].is_null() && row[2].as<bool>() && alive.count(owner) > 0;
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
      for (const auto& row : tx.exec_params(
               "WITH c AS (SELECT partition FROM skiff_partitions WHERE partition = ANY($2::int[]) "
               "AND " +
                   kClaimable +
                   " FOR UPDATE SKIP LOCKED) UPDATE skiff_partitions p SET owner = $1, epoch = "
                   "p.epoch + 1, "
                   "lease_until = now() + $3::interval FROM c WHERE p.partition = c.partition "
                   "RETURNING p.partition, p.epoch",
               static_cast<long long>(me), PartitionArray(claimable), lease_text)) {
        const uint32_t p = row[0].as<uint32_t>();
        mine[p] = row[1].as<uint64_t>();
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
      tx.exec_params(
          "WITH c AS (SELECT partition FROM skiff_partitions WHERE partition = ANY($2::int[]) "
          "AND owner = $1 FOR UPDATE) UPDATE skiff_partitions p SET owner = NULL, lease_until = "
          "NULL FROM c WHERE p.partition = c.partition",
          static_cast<long long>(me), PartitionArray(released));
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
  } catch (const std::exception& e) {
    return Unavailable(std::string("cluster: lease tick failed: ") + e.what());
  }
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
    Status s = conn_ ? Tick() : Connect();
    if (!s.ok()) {
      std::fprintf(stderr, "skiffd: %s\n", s.message().c_str());
      // A broken connection released our advisory lock: the others may
      // already be taking our partitions. Stop serving them and register
      // again as a new instance.
      if (conn_ && (!conn_->conn.is_open() || conn_->conn.backendpid() != conn_->backend)) {
        DropAll();
        conn_.reset();
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
  if (!conn_) return;
  try {
    pqxx::nontransaction tx(conn_->conn);
    std::string released =
        tx.exec_params(
              "WITH c AS (SELECT partition FROM skiff_partitions WHERE owner = $1 FOR UPDATE), "
              "u AS (UPDATE skiff_partitions p SET owner = NULL, lease_until = NULL FROM c "
              "WHERE p.partition = c.partition) SELECT clock_timestamp()::text",
              static_cast<long long>(id()))[0][0]
            .c_str();
    // Peers keep forwarding here until their next tick reads the release;
    // this instance still answers those (moved) while it waits. Two
    // heartbeats of every live peer after the release mean each has read
    // it and acted on it (a tick beats, then reads, then publishes), so
    // closing the links after that drops nothing in flight. Bounded by
    // two leases, for a peer that is frozen.
    const auto give_up = std::chrono::steady_clock::now() + 2 * options_.lease;
    for (int beats_seen = 0; beats_seen < 2 && std::chrono::steady_clock::now() < give_up;) {
      std::this_thread::sleep_for(options_.tick);
      const bool all_beat =
          tx.exec_params(
                std::string("SELECT coalesce(bool_and(heartbeat > $2::timestamptz), true) FROM "
                            "skiff_cluster_instances WHERE id <> $1 AND heartbeat > now() - "
                            "$3::interval AND id IN (") +
                    kAliveIds + ")",
                static_cast<long long>(id()), released,
                std::to_string(options_.lease.count()) + " milliseconds")[0][0]
              .as<bool>();
      if (all_beat) {
        ++beats_seen;
        released = tx.exec("SELECT clock_timestamp()::text")[0][0].c_str();
      }
    }
    tx.exec_params("DELETE FROM skiff_cluster_instances WHERE id = $1",
                   static_cast<long long>(id()));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "skiffd: cluster: giving partitions back failed (they expire): %s\n",
                 e.what());
  }
  conn_.reset();
}

}  // namespace skiff::server::cluster
