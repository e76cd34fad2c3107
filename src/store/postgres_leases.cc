#include "store/postgres_leases.h"

#include <optional>
#include <string_view>

#include <pqxx/pqxx>

#include "store/internal/pg_array.h"
#include "store/internal/pg_url.h"

namespace skiff::store {
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
  return internal::PgArrayOf(
      text, [](const std::string& s) { return std::optional<std::string_view>(s); });
}

std::string Interval(std::chrono::milliseconds d) {
  return std::to_string(d.count()) + " milliseconds";
}

}  // namespace

struct PostgresLeases::Session {
  Session(const std::string& url, uint64_t instance)
      : conn(url), backend(conn.backendpid()), id(instance) {}

  // Runs `body` on the connection; what libpqxx throws becomes unavailable
  // naming `step`.
  template <typename Body>
  Status Run(const char* step, Body&& body) {
    try {
      pqxx::nontransaction tx(conn);
      body(tx);
    } catch (const std::exception& e) {
      return Unavailable(std::string("cluster: ") + step + " failed: " + e.what());
    }
    return Status::Ok();
  }

  pqxx::connection conn;
  // libpqxx reconnects a broken connection on its own, which would drop the
  // advisory lock unseen: a changed backend means we are not alive to the
  // others any more.
  const int backend;
  uint64_t id;
};

PostgresLeases::PostgresLeases(std::unique_ptr<Session> session) : session_(std::move(session)) {}
PostgresLeases::~PostgresLeases() = default;

Result<std::unique_ptr<PostgresLeases>> PostgresLeases::Register(const std::string& store_url,
                                                                 uint32_t partitions,
                                                                 const std::string& address) {
  SKIFF_ASSIGN_OR_RETURN(internal::PgUrl url, internal::ParsePgUrl(store_url, {}));
  std::unique_ptr<Session> session;
  try {
    session = std::make_unique<Session>(url.libpq_url, 0);
    pqxx::work tx(session->conn);
    tx.exec(kSchema);
    tx.exec("INSERT INTO skiff_partitions(partition) SELECT generate_series(0, " +
            std::to_string(partitions - 1) + ") ON CONFLICT DO NOTHING");
    tx.commit();
    pqxx::nontransaction nt(session->conn);
    nt.exec("SET statement_timeout = " + std::to_string(url.options.statement_timeout.count()) +
            "; SET lock_timeout = " + std::to_string(url.options.lock_timeout.count()));
    // The lock before the row: the others' ticks delete every row whose
    // lock is not held, which would otherwise catch this one in between.
    session->id =
        nt.exec("SELECT nextval(pg_get_serial_sequence('skiff_cluster_instances', 'id'))")[0][0]
            .as<uint64_t>();
    nt.exec_params("SELECT pg_advisory_lock(hashtext(current_schema()), $1::int)",
                   static_cast<long long>(session->id));
    nt.exec_params("INSERT INTO skiff_cluster_instances(id, address) VALUES ($1, $2)",
                   static_cast<long long>(session->id), address);
  } catch (const std::exception& e) {
    return Unavailable(std::string("cluster: cannot register with PostgreSQL: ") + e.what());
  }
  return std::unique_ptr<PostgresLeases>(new PostgresLeases(std::move(session)));
}

uint64_t PostgresLeases::id() const { return session_->id; }

bool PostgresLeases::intact() const {
  return session_->conn.is_open() && session_->conn.backendpid() == session_->backend;
}

Result<std::map<uint32_t, uint64_t>> PostgresLeases::Renew(std::chrono::milliseconds lease) {
  std::map<uint32_t, uint64_t> mine;
  SKIFF_RETURN_IF_ERROR(session_->Run("renewing leases", [&](pqxx::nontransaction& tx) {
    for (const auto& row : tx.exec_params(
             "UPDATE skiff_partitions SET lease_until = now() + $2::interval WHERE owner = $1 "
             "RETURNING partition, epoch",
             static_cast<long long>(id()), Interval(lease))) {
      mine[row[0].as<uint32_t>()] = row[1].as<uint64_t>();
    }
  }));
  return mine;
}

Status PostgresLeases::Beat() {
  return session_->Run("beating", [&](pqxx::nontransaction& tx) {
    tx.exec_params("UPDATE skiff_cluster_instances SET heartbeat = now() WHERE id = $1",
                   static_cast<long long>(id()));
  });
}

Result<std::vector<ClusterInstance>> PostgresLeases::Instances(std::chrono::milliseconds lease) {
  std::vector<ClusterInstance> out;
  SKIFF_RETURN_IF_ERROR(session_->Run("reading instances", [&](pqxx::nontransaction& tx) {
    for (const auto& row :
         tx.exec_params(std::string("SELECT id, address, id IN (") + kAliveIds +
                            ") AND heartbeat > now() - $1::interval FROM skiff_cluster_instances",
                        Interval(lease))) {
      out.push_back({row[0].as<uint64_t>(), row[1].c_str(), row[2].as<bool>()});
    }
  }));
  return out;
}

Status PostgresLeases::ForgetGone() {
  return session_->Run("forgetting instances gone", [&](pqxx::nontransaction& tx) {
    tx.exec(std::string("DELETE FROM skiff_cluster_instances WHERE id NOT IN (") + kAliveIds + ")");
  });
}

Result<std::vector<PartitionLease>> PostgresLeases::Partitions() {
  std::vector<PartitionLease> out;
  SKIFF_RETURN_IF_ERROR(session_->Run("reading partitions", [&](pqxx::nontransaction& tx) {
    for (const auto& row : tx.exec(
             "SELECT partition, coalesce(owner, 0), lease_until > now() FROM skiff_partitions")) {
      out.push_back(
          {row[0].as<uint32_t>(), row[1].as<uint64_t>(), !row[2].is_null() && row[2].as<bool>()});
    }
  }));
  return out;
}

Result<std::vector<std::pair<uint32_t, uint64_t>>> PostgresLeases::Claim(
    const std::vector<uint32_t>& partitions, std::chrono::milliseconds lease) {
  std::vector<std::pair<uint32_t, uint64_t>> taken;
  SKIFF_RETURN_IF_ERROR(session_->Run("claiming partitions", [&](pqxx::nontransaction& tx) {
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
             static_cast<long long>(id()), PartitionArray(partitions), Interval(lease))) {
      taken.emplace_back(row[0].as<uint32_t>(), row[1].as<uint64_t>());
    }
  }));
  return taken;
}

Status PostgresLeases::Release(const std::vector<uint32_t>& partitions) {
  return session_->Run("giving partitions back", [&](pqxx::nontransaction& tx) {
    // FOR UPDATE waits for the writes holding the rows FOR KEY SHARE.
    tx.exec_params(
        "WITH c AS (SELECT partition FROM skiff_partitions WHERE partition = ANY($2::int[]) "
        "AND owner = $1 FOR UPDATE) UPDATE skiff_partitions p SET owner = NULL, lease_until = "
        "NULL FROM c WHERE p.partition = c.partition",
        static_cast<long long>(id()), PartitionArray(partitions));
  });
}

Result<std::string> PostgresLeases::ReleaseAll() {
  std::string released;
  SKIFF_RETURN_IF_ERROR(session_->Run("giving every partition back", [&](pqxx::nontransaction& tx) {
    released =
        tx.exec_params(
              "WITH c AS (SELECT partition FROM skiff_partitions WHERE owner = $1 FOR UPDATE), "
              "u AS (UPDATE skiff_partitions p SET owner = NULL, lease_until = NULL FROM c "
              "WHERE p.partition = c.partition) SELECT clock_timestamp()::text",
              static_cast<long long>(id()))[0][0]
            .c_str();
  }));
  return released;
}

Result<bool> PostgresLeases::AllBeatSince(const std::string& since,
                                          std::chrono::milliseconds lease) {
  bool all_beat = false;
  SKIFF_RETURN_IF_ERROR(session_->Run("reading heartbeats", [&](pqxx::nontransaction& tx) {
    all_beat =
        tx.exec_params(
              std::string("SELECT coalesce(bool_and(heartbeat > $2::timestamptz), true) FROM "
                          "skiff_cluster_instances WHERE id <> $1 AND heartbeat > now() - "
                          "$3::interval AND id IN (") +
                  kAliveIds + ")",
              static_cast<long long>(id()), since, Interval(lease))[0][0]
            .as<bool>();
  }));
  return all_beat;
}

Result<std::string> PostgresLeases::DatabaseTime() {
  std::string now;
  SKIFF_RETURN_IF_ERROR(session_->Run("reading the time", [&](pqxx::nontransaction& tx) {
    now = tx.exec("SELECT clock_timestamp()::text")[0][0].c_str();
  }));
  return now;
}

Status PostgresLeases::Unregister() {
  return session_->Run("unregistering", [&](pqxx::nontransaction& tx) {
    tx.exec_params("DELETE FROM skiff_cluster_instances WHERE id = $1",
                   static_cast<long long>(id()));
  });
}

}  // namespace skiff::store
