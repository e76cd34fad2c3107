// skiffd as a geo target: a child skiffd (support/stack.h, the suite's one
// way to start a server) on a fresh SQLite file or PostgreSQL schema, with
// the table "geo" declared in its geo catalog before it starts. Points are
// documents {"lat","lon"} written with `set`; the search is the `near` op
// with the published query's box, through the client SDK, every reply
// parsed in full.
#include <charconv>
#include <chrono>
#include <memory>
#include <string>
#include <utility>

#include "client/client.h"
#include "support/geo/geo_peers.h"
#include "support/postgres.h"
#include "support/stack.h"

namespace skiff::bench::geo {
namespace {

constexpr const char* kTable = "geo";

doc::Value PointDoc(const GeoPoint& p) { return {{"lat", p.lat}, {"lon", p.lon}}; }

class SkiffdConnection final : public GeoConnection {
 public:
  explicit SkiffdConnection(std::unique_ptr<client::Client> client) : client_(std::move(client)) {}

  Status Insert(const GeoPoint& p) override {
    return client_->Set(kTable, std::to_string(p.id), PointDoc(p));
  }
  Status Move(const GeoPoint& p) override { return Insert(p); }

  Status Search(const GeoSearch& q, std::vector<GeoHit>* out) override {
    SKIFF_ASSIGN_OR_RETURN(doc::Value reply, client_->CallSync({{"op", "near"},
                                                                {"table", kTable},
                                                                {"lat", q.lat},
                                                                {"lon", q.lon},
                                                                {"limit", q.limit},
                                                                {"box_m", {q.box_m, q.box_m}}}));
    out->clear();
    auto items = reply.find("items");
    if (items == reply.end() || !items->is_array()) return Internal("near reply has no items");
    for (const doc::Value& item : *items) {
      auto key = item.find("key");
      auto dist = item.find("dist_m");
      if (!item.is_object() || key == item.end() || !key->is_string() || dist == item.end() ||
          !dist->is_number()) {
        return Internal("malformed near item: " + item.dump());
      }
      const std::string& k = key->get_ref<const std::string&>();
      uint64_t id = 0;
      auto [end, ec] = std::from_chars(k.data(), k.data() + k.size(), id);
      if (ec != std::errc() || end != k.data() + k.size()) {
        return Internal("near returned a key that is no id: " + k);
      }
      out->push_back({id, dist->get<double>()});
    }
    return Status::Ok();
  }

 private:
  std::unique_ptr<client::Client> client_;
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
    o.geo_indexes = {server::GeoSpec{kTable, {"lat"}, {"lon"}, {}}};
    SKIFF_ASSIGN_OR_RETURN(stack_, Stack::Start(o));
    return Status::Ok();
  }

  Result<std::unique_ptr<GeoConnection>> Connect() override {
    SKIFF_ASSIGN_OR_RETURN(std::unique_ptr<client::Client> c, NewClient());
    return std::unique_ptr<GeoConnection>(new SkiffdConnection(std::move(c)));
  }

  Result<uint64_t> Count() override {
    SKIFF_ASSIGN_OR_RETURN(doc::Value geo, GeoStats());
    return geo.at("points").get<uint64_t>() + geo.at("unindexed").get<uint64_t>();
  }

  // The index's own bytes (the documents themselves are the store's).
  Result<int64_t> StorageBytes() override {
    SKIFF_ASSIGN_OR_RETURN(doc::Value geo, GeoStats());
    return geo.at("bytes").get<int64_t>();
  }

  double ServerCpu() override { return stack_ ? stack_->ServerCpuSeconds().value_or(0) : 0; }

 private:
  // One connection, one request in flight: the benchmark's shape.
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
