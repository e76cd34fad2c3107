// The Redis peer: one sorted set "geo" holding every point (GEOADD), the
// search as the page published it (GEOSEARCH FROMLONLAT lon lat BYBOX 4440
// 4440 m ASC COUNT 500 WITHDIST), moves as GEOADD XX CH.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <hiredis/hiredis.h>

#include "support/geo/geo_peers.h"
#include "support/geo/peer_process.h"

namespace skiff::bench::geo {
namespace {

constexpr const char* kKey = "geo";

// One command's arguments, numbers printed with enough digits to round-trip.
class Args {
 public:
  Args& Add(std::string s) {
    parts_.push_back(std::move(s));
    return *this;
  }
  Args& Add(double v) {
    char buf[32];
    snprintf(buf, sizeof buf, "%.17g", v);
    return Add(std::string(buf));
  }
  Args& Add(uint64_t v) { return Add(std::to_string(v)); }
  int argc() const { return int(parts_.size()); }
  std::vector<const char*> argv() const {
    std::vector<const char*> v;
    for (const std::string& p : parts_) v.push_back(p.data());
    return v;
  }
  std::vector<size_t> lengths() const {
    std::vector<size_t> v;
    for (const std::string& p : parts_) v.push_back(p.size());
    return v;
  }

 private:
  std::vector<std::string> parts_;
};

struct ReplyFree {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using Reply = std::unique_ptr<redisReply, ReplyFree>;

struct ContextFree {
  void operator()(redisContext* c) const { redisFree(c); }
};
using Context = std::unique_ptr<redisContext, ContextFree>;

Result<Reply> Command(redisContext* ctx, const Args& args) {
  std::vector<const char*> argv = args.argv();
  const std::vector<size_t> lengths = args.lengths();
  Reply reply(
      static_cast<redisReply*>(redisCommandArgv(ctx, args.argc(), argv.data(), lengths.data())));
  if (!reply) return Unavailable(std::string("redis: ") + ctx->errstr);
  if (reply->type == REDIS_REPLY_ERROR) {
    return Internal("redis: " + std::string(reply->str, reply->len));
  }
  return reply;
}

Result<int64_t> IntegerCommand(redisContext* ctx, const Args& args) {
  Result<Reply> reply = Command(ctx, args);
  if (!reply.ok()) return reply.status();
  if ((*reply)->type != REDIS_REPLY_INTEGER) return Internal("redis: expected an integer reply");
  return int64_t((*reply)->integer);
}

Result<Context> ConnectTo(uint16_t port) {
  const timeval timeout{10, 0};
  Context ctx(redisConnectWithTimeout("127.0.0.1", port, timeout));
  if (!ctx || ctx->err != 0) {
    return Unavailable("cannot connect to redis on port " + std::to_string(port) +
                       (ctx ? std::string(": ") + ctx->errstr : std::string()));
  }
  if (redisSetTimeout(ctx.get(), timeout) != REDIS_OK) return Unavailable("redis: set timeout");
  return ctx;
}

bool ParseUint(const redisReply* r, uint64_t* out) {
  if (r->type != REDIS_REPLY_STRING || r->len == 0 || r->len > 20) return false;
  char* end = nullptr;
  errno = 0;
  *out = std::strtoull(std::string(r->str, r->len).c_str(), &end, 10);
  return errno == 0 && *end == '\0';
}

bool ParseDouble(const redisReply* r, double* out) {
  if (r->type != REDIS_REPLY_STRING || r->len == 0 || r->len > 40) return false;
  const std::string text(r->str, r->len);
  char* end = nullptr;
  *out = std::strtod(text.c_str(), &end);
  return *end == '\0';
}

class RedisConnection final : public GeoConnection {
 public:
  explicit RedisConnection(Context ctx) : ctx_(std::move(ctx)) {}

  Status Insert(const GeoPoint& p) override {
    Result<int64_t> added =
        IntegerCommand(ctx_.get(), Args().Add("GEOADD").Add(kKey).Add(p.lon).Add(p.lat).Add(p.id));
    if (!added.ok()) return added.status();
    return *added == 1 ? Status::Ok() : Internal("GEOADD added " + std::to_string(*added));
  }

  Status Move(const GeoPoint& p) override {
    // XX: only an existing member; CH: count it when its place changed.
    Result<int64_t> changed = IntegerCommand(
        ctx_.get(),
        Args().Add("GEOADD").Add(kKey).Add("XX").Add("CH").Add(p.lon).Add(p.lat).Add(p.id));
    return changed.ok() ? Status::Ok() : changed.status();
  }

  Status Search(const GeoSearch& q, std::vector<GeoHit>* out) override {
    Result<Reply> reply = Command(ctx_.get(), Args()
                                                  .Add("GEOSEARCH")
                                                  .Add(kKey)
                                                  .Add("FROMLONLAT")
                                                  .Add(q.lon)
                                                  .Add(q.lat)
                                                  .Add("BYBOX")
                                                  .Add(q.box_m)
                                                  .Add(q.box_m)
                                                  .Add("m")
                                                  .Add("ASC")
                                                  .Add("COUNT")
                                                  .Add(uint64_t(q.limit))
                                                  .Add("WITHDIST"));
    if (!reply.ok()) return reply.status();
    const redisReply* r = reply->get();
    if (r->type != REDIS_REPLY_ARRAY) return Internal("GEOSEARCH: expected an array");
    out->clear();
    for (size_t i = 0; i < r->elements; ++i) {
      const redisReply* row = r->element[i];
      GeoHit hit;
      if (row->type != REDIS_REPLY_ARRAY || row->elements != 2 ||
          !ParseUint(row->element[0], &hit.id) || !ParseDouble(row->element[1], &hit.dist_m)) {
        return Internal("GEOSEARCH: a row is not [member, distance]");
      }
      out->push_back(hit);
    }
    return Status::Ok();
  }

 private:
  Context ctx_;
};

class RedisTarget final : public GeoTarget {
 public:
  explicit RedisTarget(std::string binary) : binary_(std::move(binary)) {}

  std::string name() const override { return "redis"; }

  GeoSemantics Semantics() const override {
    GeoSemantics s;
    s.box = true;
    // Redis stores a point as the centre of a 52-bit geohash cell (0.6 x
    // 0.3 m here) and measures on a 6,372,797.56 m sphere, 0.028% more than
    // the oracle's: points within a metre of an edge may fall either side.
    s.tolerance = {1.0, 5e-4, 1.0, 5e-4};
    s.metric = "haversine, R=6,372,797.56 m, on geohash cells; BYBOX filter";
    s.durability = "memory only (no RDB save, no AOF)";
    return s;
  }

  Status Reset() override {
    admin_.reset();
    peer_.reset();
    SKIFF_ASSIGN_OR_RETURN(
        peer_, PeerProcess::Start([&](uint16_t port, const std::string& dir) {
          return std::vector<std::string>{
              binary_,       "--bind",     "127.0.0.1",        "--port",    std::to_string(port),
              "--save",      "",           "--appendonly",     "no",        "--dir",
              dir,           "--loglevel", "warning",          "--logfile", "",
              "--daemonize", "no",         "--protected-mode", "yes"};
        }));
    SKIFF_ASSIGN_OR_RETURN(admin_, ConnectTo(peer_->port()));
    return Command(admin_.get(), Args().Add("PING")).status();
  }

  Result<std::unique_ptr<GeoConnection>> Connect() override {
    if (!peer_) return Unavailable("redis is not started");
    SKIFF_ASSIGN_OR_RETURN(Context ctx, ConnectTo(peer_->port()));
    return std::unique_ptr<GeoConnection>(new RedisConnection(std::move(ctx)));
  }

  Result<uint64_t> Count() override {
    Result<int64_t> n = IntegerCommand(admin_.get(), Args().Add("ZCARD").Add(kKey));
    if (!n.ok()) return n.status();
    return uint64_t(*n);
  }

  Result<int64_t> StorageBytes() override {
    return IntegerCommand(admin_.get(),
                          Args().Add("MEMORY").Add("USAGE").Add(kKey).Add("SAMPLES").Add("0"));
  }

  double ServerCpu() override { return peer_ ? peer_->CpuSeconds() : 0; }
  int64_t ServerRssBytes() override { return peer_ ? peer_->ResidentBytes() : -1; }

 private:
  std::string binary_;
  std::unique_ptr<PeerProcess> peer_;
  Context admin_;
};

}  // namespace

Result<std::unique_ptr<GeoTarget>> OpenRedisTarget() {
  const std::optional<std::string> binary = FindProgram("redis-server");
  if (!binary) return Unavailable("redis-server is not installed (Debian package redis-server)");
  return std::unique_ptr<GeoTarget>(new RedisTarget(*binary));
}

}  // namespace skiff::bench::geo
