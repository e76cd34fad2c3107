// The Tarantool peer: bench/peers/geo_tarantool.lua in a tarantool child
// process, driven over IPROTO. A search is SELECT on the RTREE index with the
// NEIGHBOR iterator and a limit; Tarantool returns tuples, not distances, so
// the client computes each point's great-circle distance from the returned
// coordinates (as the published client did, there in planar degrees). A move
// is one REPLACE of the whole tuple.
#include <string>
#include <vector>

#include "support/geo/geo_peers.h"
#include "support/geo/iproto_client.h"
#include "support/geo/peer_process.h"

namespace skiff::bench::geo {
namespace {

constexpr uint32_t kSpace = 600;  // fixed in geo_tarantool.lua
constexpr uint32_t kSpatialIndex = 1;

class TarantoolConnection final : public GeoConnection {
 public:
  explicit TarantoolConnection(std::unique_ptr<IprotoClient> client) : client_(std::move(client)) {}

  Status Insert(const GeoPoint& p) override {
    return client_->PutPoint(kSpace, /*replace=*/false, p.id, p.lon, p.lat);
  }
  Status Move(const GeoPoint& p) override {
    return client_->PutPoint(kSpace, /*replace=*/true, p.id, p.lon, p.lat);
  }
  Status Search(const GeoSearch& q, std::vector<GeoHit>* out) override {
    SKIFF_RETURN_IF_ERROR(client_->SelectPoints(kSpace, kSpatialIndex,
                                                IprotoClient::kIteratorNeighbor, q.lon, q.lat,
                                                uint32_t(q.limit), &tuples_));
    out->clear();
    for (const IprotoClient::PointTuple& t : tuples_) {
      out->push_back({t.id, GreatCircleM(q.lat, q.lon, t.y, t.x)});
    }
    return Status::Ok();
  }

 private:
  std::unique_ptr<IprotoClient> client_;
  std::vector<IprotoClient::PointTuple> tuples_;
};

class TarantoolTarget final : public GeoTarget {
 public:
  TarantoolTarget(std::string binary, std::string script)
      : binary_(std::move(binary)), script_(std::move(script)) {}

  std::string name() const override { return "tarantool"; }

  GeoSemantics Semantics() const override {
    GeoSemantics s;
    s.box = false;
    // NEIGHBOR orders by planar distance in degrees of (lon, lat). Near
    // latitude 1.3 a degree of longitude is 0.9997 of one of latitude, so
    // points within 0.05% of the 500th distance can swap. Distances are the
    // client's, from the exact coordinates returned.
    s.tolerance = {0.01, 5e-4, 1e-6, 0};
    s.metric =
        "RTREE NEIGHBOR: planar degrees of (lon, lat); great-circle distance computed "
        "by the client from the returned coordinates";
    s.durability = "WAL written at each commit, not fsynced (wal_mode=write)";
    return s;
  }

  Status Reset() override {
    admin_.reset();
    peer_.reset();
    SKIFF_ASSIGN_OR_RETURN(
        peer_, PeerProcess::Start([&](uint16_t port, const std::string& dir) {
          return std::vector<std::string>{binary_, script_, std::to_string(port), dir};
        }));
    SKIFF_ASSIGN_OR_RETURN(admin_, IprotoClient::Connect(peer_->port()));
    return Count().status();
  }

  Result<std::unique_ptr<GeoConnection>> Connect() override {
    if (!peer_) return Unavailable("tarantool is not started");
    SKIFF_ASSIGN_OR_RETURN(std::unique_ptr<IprotoClient> client,
                           IprotoClient::Connect(peer_->port()));
    return std::unique_ptr<GeoConnection>(new TarantoolConnection(std::move(client)));
  }

  Result<uint64_t> Count() override {
    Result<int64_t> n = admin_->EvalInteger("return box.space.geo_points:len()");
    if (!n.ok()) return n.status();
    return uint64_t(*n);
  }

  Result<int64_t> StorageBytes() override {
    return admin_->EvalInteger(
        "local s = box.space.geo_points return s:bsize() + s.index.primary:bsize() + "
        "s.index.spatial:bsize()");
  }

  double ServerCpu() override { return peer_ ? peer_->CpuSeconds() : 0; }
  int64_t ServerRssBytes() override { return peer_ ? peer_->ResidentBytes() : -1; }

 private:
  std::string binary_;
  std::string script_;
  std::unique_ptr<PeerProcess> peer_;
  std::unique_ptr<IprotoClient> admin_;
};

}  // namespace

Result<std::unique_ptr<GeoTarget>> OpenTarantoolTarget() {
  const std::optional<std::string> binary = FindProgram("tarantool");
  if (!binary) return Unavailable("tarantool is not installed (Debian package tarantool)");
  return std::unique_ptr<GeoTarget>(new TarantoolTarget(
      *binary, std::string(SKIFF_SOURCE_DIR) + "/bench/peers/geo_tarantool.lua"));
}

}  // namespace skiff::bench::geo
