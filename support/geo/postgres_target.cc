// The PostgreSQL peers, on the test PostgreSQL (support/postgres.h) in a
// database made for the run and dropped after:
//   postgres-point  built-in `point` (lon, lat) with a GiST index; the search
//                   is KNN `ORDER BY p <-> point(lon, lat)` (planar degrees),
//                   its distances from earthdistance's `<@>` (statute miles on
//                   a 3,958.747716-mile sphere) in metres
//   postgis         `geography(Point, 4326)` with a GiST index; KNN `<->` is
//                   the sphere distance in metres
// One libpqxx connection per benchmark connection, prepared statements, each
// write its own autocommit transaction. Server CPU is the sum over the
// backends serving this target's connections (/proc/PID/stat).
#include <cstdio>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include <pqxx/pqxx>
#include <unistd.h>

#include "support/geo/geo_peers.h"
#include "support/postgres.h"
#include "support/process.h"

namespace skiff::bench::geo {
namespace {

struct Flavour {
  std::string name;
  std::string check;  // a query that returns a row when the flavour can run
  std::string missing;
  std::vector<std::string> setup;
  std::string table;
  std::string insert;  // $1 id, $2 lon, $3 lat
  std::string move;
  std::string search;  // $1 lon, $2 lat, $3 limit -> id, metres
  GeoSemantics semantics;
};

Flavour PointFlavour() {
  Flavour f;
  f.name = "postgres-point";
  f.check = "SELECT 1 FROM pg_available_extensions WHERE name = 'earthdistance'";
  f.missing = "contrib earthdistance is not available in the test PostgreSQL";
  f.setup = {"CREATE EXTENSION IF NOT EXISTS cube", "CREATE EXTENSION IF NOT EXISTS earthdistance",
             "DROP TABLE IF EXISTS geo_point",
             "CREATE TABLE geo_point (id bigint PRIMARY KEY, p point NOT NULL)",
             "CREATE INDEX geo_point_p ON geo_point USING gist (p)"};
  f.table = "geo_point";
  f.insert = "INSERT INTO geo_point (id, p) VALUES ($1, point($2, $3))";
  f.move = "UPDATE geo_point SET p = point($2, $3) WHERE id = $1";
  f.search =
      "SELECT id, (p <@> point($1, $2)) * 1609.344 FROM geo_point "
      "ORDER BY p <-> point($1, $2) LIMIT $3";
  // Planar order in degrees (as the Tarantool peer: points within 0.05% of
  // the 500th distance can swap); earthdistance's sphere is 22 m smaller
  // than the oracle's, 3.4e-6 of every distance.
  f.semantics.box = false;
  f.semantics.tolerance = {0.01, 5e-4, 1e-3, 1e-5};
  f.semantics.metric =
      "GiST KNN on point: planar degrees of (lon, lat); distances from earthdistance <@>";
  return f;
}

Flavour PostgisFlavour() {
  Flavour f;
  f.name = "postgis";
  f.check = "SELECT 1 FROM pg_available_extensions WHERE name = 'postgis'";
  f.missing =
      "PostGIS is not installed for the test PostgreSQL (Debian package "
      "postgresql-15-postgis-3)";
  f.setup = {"CREATE EXTENSION IF NOT EXISTS postgis", "DROP TABLE IF EXISTS geo_gis",
             "CREATE TABLE geo_gis (id bigint PRIMARY KEY, g geography(Point, 4326) NOT NULL)",
             "CREATE INDEX geo_gis_g ON geo_gis USING gist (g)"};
  f.table = "geo_gis";
  f.insert =
      "INSERT INTO geo_gis (id, g) VALUES ($1, ST_SetSRID(ST_MakePoint($2, $3), 4326)::geography)";
  f.move = "UPDATE geo_gis SET g = ST_SetSRID(ST_MakePoint($2, $3), 4326)::geography WHERE id = $1";
  f.search =
      "SELECT id, g <-> ST_SetSRID(ST_MakePoint($1, $2), 4326)::geography FROM geo_gis "
      "ORDER BY 2 LIMIT $3";
  // Sphere distance on PostGIS's mean radius (6,371,008.77 m).
  f.semantics.box = false;
  f.semantics.tolerance = {1e-3, 1e-6, 1e-3, 1e-6};
  f.semantics.metric = "GiST KNN on geography: sphere distance";
  return f;
}

std::string Number(double v) {
  char buf[32];
  snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// `url` with its database replaced by `db` (URI or keyword/value form).
std::string WithDatabase(const std::string& url, const std::string& db) {
  const size_t scheme = url.find("://");
  if (scheme == std::string::npos) return url + " dbname=" + db;
  const size_t query = url.find('?', scheme + 3);
  const size_t slash = url.find('/', scheme + 3);
  const std::string rest = query == std::string::npos ? "" : url.substr(query);
  const size_t cut = std::min(slash == std::string::npos ? url.size() : slash,
                              query == std::string::npos ? url.size() : query);
  return url.substr(0, cut) + "/" + db + rest;
}

Status Run(const std::string& url, const std::vector<std::string>& statements) {
  try {
    pqxx::connection conn(url);
    for (const std::string& sql : statements) {
      pqxx::nontransaction tx(conn);
      tx.exec(sql);
    }
    return Status::Ok();
  } catch (const std::exception& e) {
    return Unavailable(std::string("PostgreSQL: ") + e.what());
  }
}

Result<std::string> One(const std::string& url, const std::string& sql) {
  try {
    pqxx::connection conn(url);
    pqxx::nontransaction tx(conn);
    const pqxx::result r = tx.exec(sql);
    if (r.empty()) return std::string();
    return std::string(r[0][0].c_str());
  } catch (const std::exception& e) {
    return Unavailable(std::string("PostgreSQL: ") + e.what());
  }
}

// Registered backend pids of a target's open connections.
class Backends {
 public:
  void Add(int pid) {
    std::lock_guard lock(mu_);
    pids_.push_back(pid);
  }
  void Remove(int pid) {
    std::lock_guard lock(mu_);
    std::erase(pids_, pid);
  }
  double CpuSeconds() {
    std::lock_guard lock(mu_);
    double sum = 0;
    for (int pid : pids_) sum += support::CpuSecondsOf(pid);
    return sum;
  }

 private:
  std::mutex mu_;
  std::vector<int> pids_;  // SKIFF_GUARDED_BY(mu_)
};

class PgConnection final : public GeoConnection {
 public:
  PgConnection(const std::string& url, const Flavour& f, Backends* backends)
      : conn_(url), backends_(backends) {
    conn_.prepare("insert", f.insert);
    conn_.prepare("move", f.move);
    conn_.prepare("search", f.search);
    pid_ = conn_.backendpid();
    backends_->Add(pid_);
  }
  ~PgConnection() override { backends_->Remove(pid_); }

  Status Insert(const GeoPoint& p) override { return Write("insert", p); }
  Status Move(const GeoPoint& p) override { return Write("move", p); }

  Status Search(const GeoSearch& q, std::vector<GeoHit>* out) override {
    try {
      pqxx::nontransaction tx(conn_);
      const pqxx::result r =
          tx.exec_prepared("search", Number(q.lon), Number(q.lat), std::to_string(q.limit));
      out->clear();
      for (const pqxx::row& row : r) out->push_back({row[0].as<uint64_t>(), row[1].as<double>()});
      return Status::Ok();
    } catch (const std::exception& e) {
      return Unavailable(std::string("PostgreSQL: ") + e.what());
    }
  }

 private:
  Status Write(const char* statement, const GeoPoint& p) {
    try {
      pqxx::nontransaction tx(conn_);
      const pqxx::result r =
          tx.exec_prepared(statement, std::to_string(p.id), Number(p.lon), Number(p.lat));
      if (r.affected_rows() != 1) return Internal(std::string(statement) + " changed no row");
      return Status::Ok();
    } catch (const std::exception& e) {
      return Unavailable(std::string("PostgreSQL: ") + e.what());
    }
  }

  pqxx::connection conn_;
  Backends* backends_;
  int pid_ = 0;
};

class PgTarget final : public GeoTarget {
 public:
  PgTarget(Flavour flavour, std::string admin_url, std::string db)
      : flavour_(std::move(flavour)),
        admin_url_(std::move(admin_url)),
        db_(std::move(db)),
        url_(WithDatabase(admin_url_, db_)) {}
  ~PgTarget() override {
    if (created_) (void)Run(admin_url_, {"DROP DATABASE IF EXISTS " + db_ + " WITH (FORCE)"});
  }

  std::string name() const override { return flavour_.name; }
  GeoSemantics Semantics() const override {
    GeoSemantics s = flavour_.semantics;
    s.durability = durability_;
    return s;
  }

  Status Reset() override {
    if (!created_) {
      SKIFF_RETURN_IF_ERROR(Run(admin_url_, {"CREATE DATABASE " + db_}));
      created_ = true;
    }
    SKIFF_RETURN_IF_ERROR(Run(url_, flavour_.setup));
    Result<std::string> sync = One(url_, "SHOW synchronous_commit");
    Result<std::string> fsync = One(url_, "SHOW fsync");
    if (sync.ok() && fsync.ok()) {
      durability_ = "commit: each write its own transaction (synchronous_commit=" + *sync +
                    ", fsync=" + *fsync + ")";
    }
    return Status::Ok();
  }

  Result<std::unique_ptr<GeoConnection>> Connect() override {
    try {
      return std::unique_ptr<GeoConnection>(new PgConnection(url_, flavour_, &backends_));
    } catch (const std::exception& e) {
      return Unavailable(std::string("PostgreSQL: ") + e.what());
    }
  }

  Result<uint64_t> Count() override {
    Result<std::string> n = One(url_, "SELECT count(*) FROM " + flavour_.table);
    if (!n.ok()) return n.status();
    return uint64_t(std::stoull(*n));
  }

  Result<int64_t> StorageBytes() override {
    Result<std::string> n = One(url_, "SELECT pg_total_relation_size('" + flavour_.table + "')");
    if (!n.ok()) return n.status();
    return int64_t(std::stoll(*n));
  }

  double ServerCpu() override { return backends_.CpuSeconds(); }

 private:
  Flavour flavour_;
  std::string admin_url_;
  std::string db_;
  std::string url_;
  bool created_ = false;
  std::string durability_ = "commit";
  Backends backends_;
};

Result<std::unique_ptr<GeoTarget>> OpenFlavour(Flavour flavour) {
  Result<support::PostgresTarget> pg = support::TestPostgres();
  if (!pg.ok()) return pg.status();
  Result<std::string> usable = One(pg->url, flavour.check);
  if (!usable.ok()) return usable.status();
  if (usable->empty()) return Unavailable(flavour.missing);
  // Unique across processes sharing one server: pid plus 32 random bits.
  std::random_device entropy;
  char suffix[16];
  snprintf(suffix, sizeof suffix, "%08x", unsigned(entropy()));
  std::string db = "skiff_geo_" + flavour.name + "_" + std::to_string(getpid()) + "_" + suffix;
  for (char& c : db) c = c == '-' ? '_' : c;
  return std::unique_ptr<GeoTarget>(new PgTarget(std::move(flavour), pg->url, db));
}

}  // namespace

Result<std::unique_ptr<GeoTarget>> OpenPostgresPointTarget() { return OpenFlavour(PointFlavour()); }
Result<std::unique_ptr<GeoTarget>> OpenPostgisTarget() { return OpenFlavour(PostgisFlavour()); }

}  // namespace skiff::bench::geo
