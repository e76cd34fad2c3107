// skiffd as a geo target: a child skiffd (support/stack.h, the suite's one
// way to start a server) on a fresh SQLite file or PostgreSQL schema, with
// the table "geo" declared in its geo catalog before it starts. Points are
// documents {"lat","lon"} written with `set`; the search is the `near` op
// with the published query's box.
//
// Each connection is driven the way the other peers' clients are: one
// blocking socket on the calling thread, one request in flight (the
// suite's LoadDriver, one connection, pipeline 1), and each reply parsed in
// full but without building a tree, as hiredis and the IPROTO client read
// theirs: a scanner over the near reply's fixed shape (support/stack.h and
// the SDK are kept for setup and stats).
#include <charconv>
#include <chrono>
#include <cmath>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "client/client.h"
#include "support/e2e_options.h"
#include "support/geo/geo_options.h"
#include "support/geo/geo_peers.h"
#include "support/load_driver.h"
#include "support/postgres.h"
#include "support/process.h"
#include "support/stack.h"

namespace skiff::bench::geo {
namespace {

constexpr const char* kTable = "geo";

void AppendDouble(std::string& out, double v) {
  char digits[32];
  out.append(digits, std::to_chars(digits, digits + sizeof digits, v).ptr);
}

// Reads a near reply into `out`, checking every item and that items come in
// the documented order (distance, then key bytes). Keys of this workload are
// decimal ids. Two forms: items, {"id":N,"ok":true,"items":[{"key":"ID",
// "dist_m":D},...]}, and columns, {"id":N,"ok":true,"keys":["ID",...],
// "dist_m":[D,...]}.
class NearReplyScanner {
 public:
  explicit NearReplyScanner(std::string_view reply) : text_(reply) {}

  Status Scan(bool columns, std::vector<GeoHit>* out) {
    out->clear();
    keys_.clear();
    if (ReplyMember(text_, "ok") != "true") return Internal("near refused: " + std::string(text_));
    SKIFF_RETURN_IF_ERROR(columns ? ScanColumns(out) : ScanItems(out));
    for (size_t i = 1; i < out->size(); ++i) {
      const double prev = (*out)[i - 1].dist_m;
      const double dist = (*out)[i].dist_m;
      if (dist < prev || (dist == prev && keys_[i] <= keys_[i - 1])) {
        return Malformed("items out of order");
      }
    }
    return End();
  }

 private:
  Status ScanItems(std::vector<GeoHit>* out) {
    SKIFF_RETURN_IF_ERROR(Find("\"items\":["));
    if (Take("]")) return Status::Ok();
    do {
      if (!Take("{\"key\":")) return Malformed("an item does not start with its key");
      uint64_t id = 0;
      SKIFF_RETURN_IF_ERROR(Key(&id));
      double dist = 0;
      if (!Take(",\"dist_m\":") || !Number(&dist) || !Take("}")) {
        return Malformed("an item without its distance");
      }
      out->push_back({id, dist});
    } while (Take(","));
    return Take("]") ? Status::Ok() : Malformed("items not closed");
  }

  Status ScanColumns(std::vector<GeoHit>* out) {
    SKIFF_RETURN_IF_ERROR(Find("\"keys\":["));
    if (!Take("]")) {
      do {
        uint64_t id = 0;
        SKIFF_RETURN_IF_ERROR(Key(&id));
        out->push_back({id, 0});
      } while (Take(","));
      if (!Take("]")) return Malformed("keys not closed");
    }
    if (!Take(",\"dist_m\":[")) return Malformed("no distances after the keys");
    size_t i = 0;
    if (!Take("]")) {
      do {
        if (i == out->size() || !Number(&(*out)[i].dist_m)) return Malformed("a distance too many");
        ++i;
      } while (Take(","));
      if (!Take("]")) return Malformed("distances not closed");
    }
    return i == out->size() ? Status::Ok() : Malformed("fewer distances than keys");
  }

  // A quoted decimal id; its text kept for the order check.
  Status Key(uint64_t* id) {
    const size_t start = at_ + 1;
    if (!Take("\"") || !Number(id) || !Take("\"")) return Malformed("a key that is no id");
    keys_.push_back(text_.substr(start, at_ - 1 - start));
    return Status::Ok();
  }
  Status Find(std::string_view member) {
    const size_t at = text_.find(member);
    if (at == std::string_view::npos) return Malformed("no " + std::string(member));
    at_ = at + member.size();
    return Status::Ok();
  }
  bool Take(std::string_view s) {
    if (text_.substr(at_, s.size()) != s) return false;
    at_ += s.size();
    return true;
  }
  template <typename T>
  bool Number(T* v) {
    const char* begin = text_.data() + at_;
    auto [end, ec] = std::from_chars(begin, text_.data() + text_.size(), *v);
    if (ec != std::errc() || end == begin) return false;
    if constexpr (std::is_floating_point_v<T>) {
      if (!std::isfinite(*v)) return false;  // from_chars reads "nan" and "inf"
    }
    at_ += size_t(end - begin);
    return true;
  }
  Status End() {
    return Take("}") && at_ == text_.size() ? Status::Ok() : Malformed("trailing text");
  }
  Status Malformed(std::string_view why) const {
    return Internal("malformed near reply (" + std::string(why) + " at byte " +
                    std::to_string(at_) + "): " + std::string(text_.substr(0, 200)));
  }

  std::string_view text_;
  size_t at_ = 0;
  std::vector<std::string_view> keys_;  // the items' keys, in order
};

class SkiffdConnection final : public GeoConnection {
 public:
  SkiffdConnection(std::unique_ptr<LoadDriver> driver, bool columns)
      : driver_(std::move(driver)), columns_(columns) {}

  Status Insert(const GeoPoint& p) override {
    Start("set");
    body_ += ",\"key\":\"";
    body_ += std::to_string(p.id);
    body_ += "\",\"value\":{";
    AppendPosition(p.lat, p.lon);
    body_ += '}';
    SKIFF_ASSIGN_OR_RETURN(std::string reply, driver_->Call(body_));
    if (ReplyMember(reply, "ok") != "true") return Internal("set refused: " + reply);
    return Status::Ok();
  }
  Status Move(const GeoPoint& p) override { return Insert(p); }

  Status Search(const GeoSearch& q, std::vector<GeoHit>* out) override {
    Start("near");
    body_ += ',';
    AppendPosition(q.lat, q.lon);
    body_ += ",\"limit\":";
    body_ += std::to_string(q.limit);
    body_ += ",\"box_m\":[";
    AppendDouble(body_, q.box_m);
    body_ += ',';
    AppendDouble(body_, q.box_m);
    body_ += ']';
    if (columns_) body_ += ",\"columns\":true";
    SKIFF_ASSIGN_OR_RETURN(std::string reply, driver_->Call(body_));
    return NearReplyScanner(reply).Scan(columns_, out);
  }

 private:
  // A request's members after its id, `"op":"<op>","table":"geo"` first.
  void Start(std::string_view op) {
    body_.assign("\"op\":\"");
    body_ += op;
    body_ += "\",\"table\":\"";
    body_ += kTable;
    body_ += '"';
  }
  // "lat":<lat>,"lon":<lon>, each the shortest text that reads back exact.
  void AppendPosition(double lat, double lon) {
    body_ += "\"lat\":";
    AppendDouble(body_, lat);
    body_ += ",\"lon\":";
    AppendDouble(body_, lon);
  }

  std::unique_ptr<LoadDriver> driver_;
  bool columns_;
  std::string body_;
};

class SkiffdTarget final : public GeoTarget {
 public:
  SkiffdTarget(std::string store, std::string durability)
      : store_(std::move(store)), durability_(std::move(durability)) {}

  std::string name() const override { return "skiffd-" + store_ + "-" + durability_; }

  GeoSemantics Semantics() const override {
    GeoSemantics s;
    s.box = true;  // the near op's box is the oracle's; held exact
    s.metric = "great circle, R=6,371,008.8 m, unit vectors in an R-tree; box filter";
    s.durability = durability_ == "commit"
                       ? "the store's commit (group commit) before the reply"
                       : "applied in memory; in the store within the flush interval";
    return s;
  }

  Status Reset() override {
    stack_.reset();
    StackOptions o;
    o.store = store_;
    o.durability = durability_;
    o.server = "child";
    o.skiffd = GetE2eOptions().skiffd;
    o.child_flags = GetE2eOptions().skiffd_args;
    o.geo_indexes = {server::GeoSpec{kTable, {"lat"}, {"lon"}, {}}};
    SKIFF_ASSIGN_OR_RETURN(stack_, Stack::Start(o));
    return Status::Ok();
  }

  Result<std::unique_ptr<GeoConnection>> Connect() override {
    if (!stack_) return Internal("the skiffd target was not reset");
    DriverOptions o;
    o.port = stack_->port();
    o.user = stack_->user();
    o.secret = stack_->secret();
    o.connections = 1;
    o.pipeline = 1;  // one request in flight: the benchmark's shape
    o.timeout = std::chrono::seconds(60);
    SKIFF_ASSIGN_OR_RETURN(std::unique_ptr<LoadDriver> driver, LoadDriver::Connect(o));
    return std::unique_ptr<GeoConnection>(
        new SkiffdConnection(std::move(driver), GetGeoOptions().near_columns));
  }

  // The points the index holds: a document it could not index (no valid
  // position) is no point, and counting it would hide a lost one.
  Result<uint64_t> Count() override {
    SKIFF_ASSIGN_OR_RETURN(doc::Value geo, GeoStats());
    return geo.at("points").get<uint64_t>();
  }

  // The index's own bytes (the documents themselves are the store's).
  Result<int64_t> StorageBytes() override {
    SKIFF_ASSIGN_OR_RETURN(doc::Value geo, GeoStats());
    return geo.at("bytes").get<int64_t>();
  }

  double ServerCpu() override { return stack_ ? stack_->ServerCpuSeconds().value_or(0) : 0; }
  int64_t ServerRssBytes() override {
    return stack_ && stack_->pid() > 0 ? support::ResidentBytes(stack_->pid()) : -1;
  }

 private:
  // An SDK client for the stats op.
  Result<std::unique_ptr<client::Client>> NewClient() {
    if (!stack_) return Internal("the skiffd target was not reset");
    client::ClientOptions o;
    o.port = stack_->port();
    o.user = stack_->user();
    o.secret = stack_->secret();
    o.max_in_flight = 1;
    o.request_timeout = std::chrono::seconds(60);
    return client::Client::Connect(o);
  }

  // The `stats` op's figures of the table's index.
  Result<doc::Value> GeoStats() {
    SKIFF_ASSIGN_OR_RETURN(std::unique_ptr<client::Client> c, NewClient());
    SKIFF_ASSIGN_OR_RETURN(doc::Value stats, c->Stats());
    const doc::Value& geo = stats["geo"][kTable];
    if (!geo.is_object() || !geo["points"].is_number_unsigned()) {
      return Internal("stats has no geo index for '" + std::string(kTable) + "'");
    }
    return geo;
  }

  const std::string store_;
  const std::string durability_;
  std::unique_ptr<Stack> stack_;
};

}  // namespace

Result<std::unique_ptr<GeoTarget>> OpenSkiffdTarget(const std::string& store,
                                                    const std::string& durability) {
  if (store != "sqlite" && store != "postgres") {
    return BadRequest("skiffd geo target runs on sqlite or postgres, not " + store);
  }
  if (store == "postgres") {
    if (Result<support::PostgresTarget> pg = support::TestPostgres(); !pg.ok()) {
      return Unavailable("PostgreSQL: " + pg.status().message());
    }
  }
  return std::unique_ptr<GeoTarget>(new SkiffdTarget(store, durability));
}

}  // namespace skiff::bench::geo
