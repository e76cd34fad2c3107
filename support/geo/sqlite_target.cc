// The SQLite peer, in this process: an R*Tree virtual table of points (a
// zero-size box per point, the exact coordinates in auxiliary columns) in a
// WAL file in a temp dir, one sqlite3 handle per benchmark connection. SQLite
// has no k-nearest query: the search is the published 4,440 m box, refined on
// the exact columns and ordered by an application-defined haversine function,
// LIMIT 500. There is no server process, so "server" CPU is this whole
// process (the load loop included).
#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include <sqlite3.h>
#include <unistd.h>

#include "support/geo/geo_peers.h"
#include "support/process.h"
#include "support/temp_dir.h"

namespace skiff::bench::geo {
namespace {

constexpr double kPi = 3.14159265358979323846;

void Haversine(sqlite3_context* ctx, int, sqlite3_value** v) {
  sqlite3_result_double(ctx, GreatCircleM(sqlite3_value_double(v[0]), sqlite3_value_double(v[1]),
                                          sqlite3_value_double(v[2]), sqlite3_value_double(v[3])));
}

// 16 writers contend for one write lock; SQLite's own busy timeout sleeps in
// steps of milliseconds, which would measure the sleeps. Yield, then sleep
// 100 us, for up to about 10 s.
int Busy(void*, int count) {
  if (count >= 100'000) return 0;
  if (count < 16) {
    std::this_thread::yield();
  } else {
    usleep(100);
  }
  return 1;
}

Status SqliteError(sqlite3* db, const std::string& what) {
  return Unavailable("sqlite " + what + ": " + (db != nullptr ? sqlite3_errmsg(db) : "no handle"));
}

class Handle {
 public:
  static Result<std::unique_ptr<Handle>> Open(const std::string& path) {
    std::unique_ptr<Handle> h(new Handle());
    if (sqlite3_open_v2(path.c_str(), &h->db_,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                        nullptr) != SQLITE_OK) {
      return SqliteError(h->db_, "open " + path);
    }
    sqlite3_busy_handler(h->db_, Busy, nullptr);
    if (sqlite3_create_function(h->db_, "geo_dist", 4, SQLITE_UTF8 | SQLITE_DETERMINISTIC, nullptr,
                                Haversine, nullptr, nullptr) != SQLITE_OK) {
      return SqliteError(h->db_, "create_function");
    }
    // 32 MiB of page cache per connection (the default is 2 MiB): the
    // tree then stays in each connection's cache instead of being copied in
    // from the OS with a read() per page on every search.
    SKIFF_RETURN_IF_ERROR(h->Exec("PRAGMA synchronous=NORMAL; PRAGMA cache_size=-32768"));
    return h;
  }
  ~Handle() {
    for (sqlite3_stmt* s : statements_) sqlite3_finalize(s);
    sqlite3_close(db_);
  }

  Status Exec(const std::string& sql) {
    char* error = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &error) != SQLITE_OK) {
      const std::string message = error != nullptr ? error : "?";
      sqlite3_free(error);
      return Unavailable("sqlite: " + message + " in " + sql);
    }
    return Status::Ok();
  }

  Result<sqlite3_stmt*> Prepare(const std::string& sql) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v3(db_, sql.c_str(), -1, SQLITE_PREPARE_PERSISTENT, &s, nullptr) !=
        SQLITE_OK) {
      return SqliteError(db_, "prepare");
    }
    statements_.push_back(s);
    return s;
  }

  Result<int64_t> Integer(const std::string& sql) {
    Result<sqlite3_stmt*> s = Prepare(sql);
    if (!s.ok()) return s.status();
    if (sqlite3_step(*s) != SQLITE_ROW) return SqliteError(db_, sql);
    const int64_t v = sqlite3_column_int64(*s, 0);
    sqlite3_reset(*s);
    return v;
  }

  sqlite3* db() { return db_; }

 private:
  Handle() = default;
  sqlite3* db_ = nullptr;
  std::vector<sqlite3_stmt*> statements_;
};

class SqliteConnection final : public GeoConnection {
 public:
  static Result<std::unique_ptr<GeoConnection>> Open(const std::string& path) {
    Result<std::unique_ptr<Handle>> h = Handle::Open(path);
    if (!h.ok()) return h.status();
    std::unique_ptr<SqliteConnection> c(new SqliteConnection(std::move(*h)));
    Result<sqlite3_stmt*> insert = c->h_->Prepare(
        "INSERT INTO geo_rtree (id, min_lat, max_lat, min_lon, max_lon, lat, lon) "
        "VALUES (?1, ?2, ?2, ?3, ?3, ?2, ?3)");
    Result<sqlite3_stmt*> move = c->h_->Prepare(
        "UPDATE geo_rtree SET min_lat = ?2, max_lat = ?2, min_lon = ?3, max_lon = ?3, lat = ?2, "
        "lon = ?3 WHERE id = ?1");
    Result<sqlite3_stmt*> search = c->h_->Prepare(
        "SELECT id, geo_dist(?1, ?2, lat, lon) AS d FROM geo_rtree "
        "WHERE min_lat <= ?4 AND max_lat >= ?3 AND min_lon <= ?6 AND max_lon >= ?5 "
        "AND lat BETWEEN ?3 AND ?4 AND lon BETWEEN ?5 AND ?6 ORDER BY d, id LIMIT ?7");
    for (const auto* r : {&insert, &move, &search}) {
      if (!r->ok()) return r->status();
    }
    c->insert_ = *insert;
    c->move_ = *move;
    c->search_ = *search;
    return std::unique_ptr<GeoConnection>(std::move(c));
  }

  Status Insert(const GeoPoint& p) override { return Write(insert_, p); }
  Status Move(const GeoPoint& p) override { return Write(move_, p); }

  Status Search(const GeoSearch& q, std::vector<GeoHit>* out) override {
    // The box as skiffd defines it; the benchmark's square is far from +-180.
    const double half_lat = (q.box_m / 2) / kEarthRadiusM * 180 / kPi;
    const double half_lon =
        (q.box_m / 2) / (kEarthRadiusM * std::cos(q.lat * kPi / 180)) * 180 / kPi;
    if (q.lon - half_lon < -180 || q.lon + half_lon > 180 || std::abs(q.lat) + half_lat > 90) {
      return BadRequest("sqlite peer: the box must not cross +-180 or a pole");
    }
    sqlite3_bind_double(search_, 1, q.lat);
    sqlite3_bind_double(search_, 2, q.lon);
    sqlite3_bind_double(search_, 3, q.lat - half_lat);
    sqlite3_bind_double(search_, 4, q.lat + half_lat);
    sqlite3_bind_double(search_, 5, q.lon - half_lon);
    sqlite3_bind_double(search_, 6, q.lon + half_lon);
    sqlite3_bind_int64(search_, 7, int64_t(q.limit));
    out->clear();
    int rc;
    while ((rc = sqlite3_step(search_)) == SQLITE_ROW) {
      out->push_back(
          {uint64_t(sqlite3_column_int64(search_, 0)), sqlite3_column_double(search_, 1)});
    }
    sqlite3_reset(search_);
    return rc == SQLITE_DONE ? Status::Ok() : SqliteError(h_->db(), "search");
  }

 private:
  explicit SqliteConnection(std::unique_ptr<Handle> h) : h_(std::move(h)) {}

  Status Write(sqlite3_stmt* s, const GeoPoint& p) {
    sqlite3_bind_int64(s, 1, int64_t(p.id));
    sqlite3_bind_double(s, 2, p.lat);
    sqlite3_bind_double(s, 3, p.lon);
    const int rc = sqlite3_step(s);
    sqlite3_reset(s);
    if (rc != SQLITE_DONE) return SqliteError(h_->db(), "write");
    if (sqlite3_changes(h_->db()) != 1) return Internal("sqlite: a write changed no row");
    return Status::Ok();
  }

  std::unique_ptr<Handle> h_;
  sqlite3_stmt* insert_ = nullptr;
  sqlite3_stmt* move_ = nullptr;
  sqlite3_stmt* search_ = nullptr;
};

class SqliteTarget final : public GeoTarget {
 public:
  std::string name() const override { return "sqlite-rtree"; }

  GeoSemantics Semantics() const override {
    GeoSemantics s;
    s.box = true;
    s.tolerance = {};  // exact: the box and the distance are the oracle's
    s.metric = "R*Tree box (float32 bounds, refined on exact columns), ordered by haversine";
    s.durability = "WAL, synchronous=NORMAL: each commit written, fsynced at checkpoints";
    return s;
  }

  Status Reset() override {
    admin_.reset();
    dir_ = std::make_unique<support::TempDir>();
    path_ = dir_->File("geo.db");
    Result<std::unique_ptr<Handle>> admin = Handle::Open(path_);
    if (!admin.ok()) return admin.status();
    admin_ = std::move(*admin);
    SKIFF_RETURN_IF_ERROR(admin_->Exec("PRAGMA journal_mode=WAL"));
    return admin_->Exec(
        "CREATE VIRTUAL TABLE geo_rtree USING rtree(id, min_lat, max_lat, min_lon, max_lon, "
        "+lat REAL, +lon REAL)");
  }

  Result<std::unique_ptr<GeoConnection>> Connect() override {
    if (!admin_) return Unavailable("sqlite target is not reset");
    return SqliteConnection::Open(path_);
  }

  Result<uint64_t> Count() override {
    Result<int64_t> n = admin_->Integer("SELECT count(*) FROM geo_rtree");
    if (!n.ok()) return n.status();
    return uint64_t(*n);
  }

  Result<int64_t> StorageBytes() override {
    Result<int64_t> pages = admin_->Integer("PRAGMA page_count");
    Result<int64_t> size = admin_->Integer("PRAGMA page_size");
    if (!pages.ok()) return pages.status();
    if (!size.ok()) return size.status();
    return *pages * *size;
  }

  double ServerCpu() override { return support::ProcessCpuSeconds(); }

 private:
  std::unique_ptr<support::TempDir> dir_;
  std::string path_;
  std::unique_ptr<Handle> admin_;
};

}  // namespace

Result<std::unique_ptr<GeoTarget>> OpenSqliteRtreeTarget() {
  if (sqlite3_compileoption_used("ENABLE_RTREE") == 0) {
    return Unavailable("this SQLite is built without R*Tree");
  }
  return std::unique_ptr<GeoTarget>(new SqliteTarget());
}

}  // namespace skiff::bench::geo
