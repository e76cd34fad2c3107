// The geo family (docs/geo.md): the hugedbbench 2023geo workload (points in
// a 22 km square, 500-nearest searches, moves) against each peer in one run,
// with one C++ client shape for all: 16 connections, one request in flight
// each, every reply parsed (support/geo/). Per target, four cases run in
// order and share the target's state:
//
//   geo/<target>/insert          every point, unbatched
//   geo/<target>/search          500 nearest for a wall-time budget
//   geo/<target>/move            5,000 pinned moves of ids 1..100
//   geo/<target>/move_sustained  random moves for a wall-time budget
//
// Each case checks what it did after its timed part: the point count, a
// sample of answers against the brute-force great-circle oracle (recall and
// largest distance error, within the target's documented bounds), moved
// points found at their new place and not at their old one. A peer that is
// not installed is skipped, loudly. Judged beside the time:
// server_cpu_us_per_op (the CPU of whatever answers, per request: the peer
// or skiffd process, the PostgreSQL backends of the connections, and for
// sqlite-rtree this whole process, clients included) and server_rss_mib
// (after the phase, where one process of its own answers: redis,
// tarantool, skiffd). The skiffd-* targets are skiffd itself,
// a child process answering `near` over its WebSocket; the geo_index/*
// cases measure its in-memory index in this process: 500-nearest, a move,
// and a rebuild.
#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "geo/geo_index.h"
#include "support/bench_options.h"
#include "support/bench_registry.h"
#include "support/counters.h"
#include "support/geo/geo_options.h"
#include "support/geo/geo_peers.h"
#include "support/geo/geo_session.h"
#include "support/postgres.h"

namespace skiff::bench {
namespace {

using geo::GeoSession;
using geo::PhaseResult;

using Opener = std::function<Result<std::unique_ptr<geo::GeoTarget>>()>;

struct Peer {
  const char* name;
  Opener open;
  bool postgres;  // unavailable PostgreSQL is a failure under CI (SkipUnavailable)
};

const std::vector<Peer>& Peers() {
  static const auto* peers = new std::vector<Peer>{
      {"redis", geo::OpenRedisTarget, false},
      {"tarantool", geo::OpenTarantoolTarget, false},
      {"postgres-point", geo::OpenPostgresPointTarget, true},
      {"postgis", geo::OpenPostgisTarget, true},
      {"sqlite-rtree", geo::OpenSqliteRtreeTarget, false},
      // skiffd itself, a child process over its WebSocket.
      {"skiffd-sqlite-commit", [] { return geo::OpenSkiffdTarget("sqlite", "commit"); }, false},
      {"skiffd-sqlite-memory", [] { return geo::OpenSkiffdTarget("sqlite", "memory"); }, false},
      {"skiffd-postgres-commit", [] { return geo::OpenSkiffdTarget("postgres", "commit"); }, true},
  };
  return *peers;
}

const geo::GeoWorkload& Workload() {
  static const auto* workload =
      new geo::GeoWorkload(geo::GetGeoOptions().Points(), geo::kPinnedQueries);
  return *workload;
}

// The session of the target being measured. Only one target runs at a time:
// starting another stops the previous peer first, so no idle peer holds
// memory or wakes up during someone else's measurement.
class ActiveSession {
 public:
  // An object, not a leaked pointer: its destructor at exit stops a peer
  // whose last case did not run (a --benchmark_filter) and drops its
  // database.
  static ActiveSession& Get() {
    static ActiveSession active;
    return active;
  }
  // The session for `peer`, with every point inserted when `insert` is set
  // (untimed, for a case run without the insert case before it). Sets
  // *missing when the peer cannot run here at all.
  Result<GeoSession*> For(const Peer& peer, bool insert, bool* missing) {
    *missing = false;
    if (name_ != peer.name || !session_) {
      session_.reset();
      name_ = peer.name;
      Result<std::unique_ptr<geo::GeoTarget>> target = peer.open();
      if (!target.ok()) {
        *missing = true;
        return target.status();
      }
      session_ = std::make_unique<GeoSession>(std::move(*target), Workload(),
                                              geo::GetGeoOptions().connections);
    }
    if (insert && !session_->inserted()) {
      SKIFF_RETURN_IF_ERROR(session_->Open());
      const PhaseResult r = session_->Insert();
      if (r.errors > 0) return Internal("inserting first: " + r.first_error);
    }
    return session_.get();
  }
  void End() {
    session_.reset();
    name_.clear();
  }

 private:
  std::string name_;
  std::unique_ptr<GeoSession> session_;
};

// A peer that cannot run here. A missing PostgreSQL server follows the
// suite's rule for stores (SkipUnavailable: it fails under CI or when
// SKIFF_TEST_POSTGRES_URL named one). A missing package (a peer binary,
// PostGIS, earthdistance) is a loud skip, except under CI, where tools/setup
// installs every peer, so there it fails the run.
void SkipMissing(benchmark::State& state, const Peer& peer, const Status& why) {
  const bool no_server = peer.postgres && (why.message().rfind("PostgreSQL: ", 0) == 0 ||
                                           !support::TestPostgres().ok());
  if (no_server) return SkipUnavailable(state, "postgres", why);
  if (support::InCi()) {
    state.SkipWithError((std::string(peer.name) + " is missing under CI (tools/setup installs " +
                         "it): " + why.message())
                            .c_str());
    return;
  }
  std::fprintf(stderr, "geo: *** %s: %s; skipped ***\n", peer.name, why.message().c_str());
  state.SkipWithError(("skipped: " + std::string(peer.name) + ": " + why.message()).c_str());
}

void ReportPhase(benchmark::State& state, const std::string& label, const PhaseResult& r) {
  const double ops = double(std::max<uint64_t>(r.ops, 1));
  SetDeterministic(state, "err", double(r.errors));
  SetInfo(state, "ops", double(r.ops));
  SetInfo(state, "ops_per_s", double(r.ops) / r.wall_seconds);
  SetInfo(state, "wall_s", r.wall_seconds);
  SetJudged(state, "server_cpu_us_per_op", r.server_cpu_seconds / ops * 1e6);
  SetInfo(state, "client_cpu_us_per_op", r.client_cpu_seconds / ops * 1e6);
  r.latency.Report(state);
  state.SetItemsProcessed(int64_t(r.ops));
  const LatencySummary l = r.latency.Summarize();
  std::fprintf(stderr,
               "geo: %-28s %8llu ops in %6.2f s  %9.1f ops/s  p50 %8.1f us  p99 %8.1f us  "
               "server CPU %7.1f us/op\n",
               label.c_str(), static_cast<unsigned long long>(r.ops), r.wall_seconds,
               double(r.ops) / r.wall_seconds, l.p50_us, l.p99_us,
               r.server_cpu_seconds / ops * 1e6);
}

// Reports the checks; false (the case fails) when a difference from the
// oracle is not explained by the target's documented tolerance.
bool ReportChecks(benchmark::State& state, const std::string& label,
                  const geo::CheckSummary& summary) {
  SetDeterministic(state, "queries_checked", double(summary.answers));
  SetInfo(state, "recall_min", summary.min_recall);
  SetInfo(state, "recall_mean", summary.mean_recall);
  SetInfo(state, "max_dist_err_m", summary.max_dist_err_m);
  SetInfo(state, "extra_points", double(summary.extra));
  SetInfo(state, "order_inversions", double(summary.inversions));
  std::fprintf(stderr,
               "geo: %-28s checked %zu answers: recall min %.4f mean %.5f, max distance error "
               "%.3g m, %zu extra points, %zu order inversions, %zu unexplained\n",
               label.c_str(), summary.answers, summary.min_recall, summary.mean_recall,
               summary.max_dist_err_m, summary.extra, summary.inversions, summary.unexplained);
  if (summary.unexplained > 0) {
    state.SkipWithError((label +
                         ": answers differ from the oracle beyond the target's own "
                         "tolerance: " +
                         summary.first_problem)
                            .c_str());
    return false;
  }
  return true;
}

enum class Phase { kInsert, kSearch, kMove, kMoveSustained };

void BM_GeoPhase(benchmark::State& state, const Peer& peer, Phase phase) {
  const geo::GeoOptions& options = geo::GetGeoOptions();
  ActiveSession& active = ActiveSession::Get();
  bool missing = false;
  Result<GeoSession*> opened = active.For(peer, /*insert=*/phase != Phase::kInsert, &missing);
  if (!opened.ok()) {
    if (missing) return SkipMissing(state, peer, opened.status());
    return state.SkipWithError(
        (std::string(peer.name) + ": " + opened.status().ToString()).c_str());
  }
  GeoSession& session = **opened;
  const char* names[] = {"insert", "search", "move", "move_sustained"};
  const std::string label = std::string(peer.name) + "/" + names[int(phase)];
  PhaseResult r;
  for (auto _ : state) {
    switch (phase) {
      case Phase::kInsert: {
        if (Status s = session.Open(); !s.ok()) return state.SkipWithError(s.ToString().c_str());
        r = session.Insert();
        break;
      }
      case Phase::kSearch:
        r = session.Search({options.SearchBudget(), geo::kPinnedQueries}, options.Check());
        break;
      case Phase::kMove:
        r = session.PinnedMoves();
        break;
      case Phase::kMoveSustained:
        r = session.SustainedMoves({options.MoveBudget(), 1'000'000});
        break;
    }
    state.SetIterationTime(r.wall_seconds);
  }
  ReportPhase(state, label, r);
  if (r.errors > 0) return state.SkipWithError((label + ": " + r.first_error).c_str());
  if (const int64_t rss = session.target().ServerRssBytes(); rss > 0) {
    SetJudged(state, "server_rss_mib", double(rss) / (1 << 20));
  }

  // After the timed part: what the phase did must be true of the target.
  switch (phase) {
    case Phase::kInsert: {
      // The points the target holds now, as it counts them.
      Result<uint64_t> count = session.target().Count();
      if (!count.ok()) return state.SkipWithError(count.status().ToString().c_str());
      SetDeterministic(state, "points", double(*count));
      if (*count != Workload().points().size()) {
        return state.SkipWithError(("target holds " + std::to_string(*count) + " of " +
                                    std::to_string(Workload().points().size()) + " points")
                                       .c_str());
      }
      Result<int64_t> bytes = session.target().StorageBytes();
      if (bytes.ok()) SetInfo(state, "storage_bytes_per_point", double(*bytes) / double(*count));
      break;
    }
    case Phase::kSearch:
      SetInfo(state, "queries", double(r.ops));
      SetInfo(state, "budget_cut", r.budget_cut ? 1 : 0);
      break;
    case Phase::kMove: {
      SetDeterministic(state, "moves", double(r.ops));
      std::vector<uint64_t> ids;
      for (uint64_t id = 1; id <= std::min<size_t>(geo::kMovedIds, Workload().points().size());
           ++id) {
        ids.push_back(id);
      }
      Result<size_t> found = session.CheckMoved(ids);
      if (!found.ok()) return state.SkipWithError(found.status().ToString().c_str());
      SetDeterministic(state, "moved_ids_checked", double(*found));
      break;
    }
    case Phase::kMoveSustained: {
      SetInfo(state, "budget_cut", r.budget_cut ? 1 : 0);
      const std::vector<uint64_t> ids = session.SustainedMovedIds(200);
      Result<size_t> found = session.CheckMoved(ids);
      if (!found.ok()) return state.SkipWithError(found.status().ToString().c_str());
      SetInfo(state, "sustained_ids_checked", double(*found));
      break;
    }
  }
  Result<geo::CheckSummary> checked = session.CheckQueries(options.Check());
  if (!checked.ok()) return state.SkipWithError(checked.status().ToString().c_str());
  if (!ReportChecks(state, label, *checked)) return;
  const geo::GeoSemantics s = session.target().Semantics();
  state.SetLabel(s.durability);
  if (phase == Phase::kMoveSustained) active.End();  // the peer's last case: stop it now
}

// --- skiffd's index in this process -------------------------------------

using skiff::geo::GeoHit;
using skiff::geo::GeoIndex;
using skiff::geo::GeoQuery;

GeoQuery AsQuery(const geo::GeoSearch& s) {
  GeoQuery q;
  q.lat = s.lat;
  q.lon = s.lon;
  q.limit = s.limit;
  q.box_w_m = s.box_m;
  q.box_h_m = s.box_m;
  return q;
}

std::vector<geo::GeoHit> AsHits(const std::vector<GeoHit>& hits) {
  std::vector<geo::GeoHit> out;
  for (const GeoHit& h : hits) out.push_back({std::stoull(h.key), h.dist_m()});
  return out;
}

// Inserts every point one by one, as skiffd's insert phase does, then asks
// one query and waits for the pack it starts: with no query among them the
// inserts start none, and the first search after them does (as in skiffd).
void Fill(GeoIndex& index, const std::vector<geo::GeoPoint>& points) {
  for (const geo::GeoPoint& p : points) (void)index.Upsert(std::to_string(p.id), p.lat, p.lon);
  std::vector<GeoHit> hits;
  (void)index.Nearest(AsQuery(Workload().Query(0)), &hits);
  index.AwaitRepack();
}

// The index's answers must be the oracle's exactly (same box, same sphere).
bool VerifyIndex(benchmark::State& state, GeoIndex& index, const std::vector<geo::GeoPoint>& places,
                 size_t queries) {
  geo::CheckSummary summary;
  std::vector<GeoHit> hits;
  for (size_t i = 0; i < queries; ++i) {
    const geo::GeoSearch q = Workload().Query(i);
    if (!index.Nearest(AsQuery(q), &hits).ok()) {
      state.SkipWithError("the index refused a query");
      return false;
    }
    const std::vector<geo::GeoHit> got = AsHits(hits);
    // The default tolerance is exact.
    const geo::AnswerCheck c = geo::CheckAnswer(
        got, geo::BruteForceNearest(places, q, /*use_box=*/true), places, q, /*use_box=*/true);
    summary.Add(c);
    if (c.unexplained > 0 || c.recall != 1 || c.extra != 0 || c.inversions != 0) {
      state.SkipWithError(("index answer differs from the oracle at query " + std::to_string(i) +
                           (c.problem.empty() ? "" : ": " + c.problem))
                              .c_str());
      return false;
    }
  }
  SetDeterministic(state, "queries_checked", double(summary.answers));
  return true;
}

void BM_GeoIndexNearest(benchmark::State& state) {
  GeoIndex index;
  const std::vector<geo::GeoPoint>& points = Workload().points();
  Fill(index, points);
  std::vector<GeoHit> hits;
  size_t i = 0;
  uint64_t returned = 0;
  for (auto _ : state) {
    if (!index.Nearest(AsQuery(Workload().Query(i++ % Workload().query_count())), &hits).ok()) {
      return state.SkipWithError("the index refused a query");
    }
    returned += hits.size();
  }
  SetInfo(state, "points_per_query", double(returned) / double(std::max<size_t>(i, 1)));
  SetInfo(state, "index_bytes_per_point", index.Stats().BytesPerPoint());
  SetInfo(state, "repacks", double(index.Stats().repacks));
  state.SetItemsProcessed(int64_t(i));
  VerifyIndex(state, index, points, geo::GetGeoOptions().Check());
}

void BM_GeoIndexMove(benchmark::State& state) {
  GeoIndex index;
  std::vector<geo::GeoPoint> places = Workload().points();
  Fill(index, places);
  geo::GeoWorkload::MoveStream stream(0, 1, places.size());
  uint64_t moves = 0;
  for (auto _ : state) {
    const geo::GeoPoint m = stream.Next();
    if (!index.Upsert(std::to_string(m.id), m.lat, m.lon).ok()) {
      return state.SkipWithError("the index refused a move");
    }
    places[m.id - 1] = m;
    ++moves;
  }
  state.SetItemsProcessed(int64_t(moves));
  index.AwaitRepack();
  SetInfo(state, "index_bytes_per_point", index.Stats().BytesPerPoint());
  SetInfo(state, "repacks", double(index.Stats().repacks));
  if (index.size() != places.size()) return state.SkipWithError("moves changed the point count");
  VerifyIndex(state, index, places, geo::GetGeoOptions().Check());
}

// A rebuild at start, as skiffd would do it from the store: every point in
// one Reset (a packed tree).
void BM_GeoIndexBuild(benchmark::State& state) {
  const size_t n = size_t(state.range(0));
  std::unique_ptr<geo::GeoWorkload> own;
  if (n != Workload().points().size()) own = std::make_unique<geo::GeoWorkload>(n, 5);
  const geo::GeoWorkload& big = own ? *own : Workload();
  std::vector<skiff::geo::GeoEntry> entries;
  entries.reserve(n);
  for (const geo::GeoPoint& p : big.points())
    entries.push_back({std::to_string(p.id), p.lat, p.lon});
  GeoIndex index;
  for (auto _ : state) {
    if (!index.Reset(entries).ok()) return state.SkipWithError("the index refused the entries");
  }
  SetDeterministic(state, "points", double(index.size()));
  SetInfo(state, "index_bytes_per_point", index.Stats().BytesPerPoint());
  if (index.size() != n) return state.SkipWithError("the rebuilt index lost points");
  VerifyIndex(state, index, big.points(), 5);
}

void MissingBanner() {
  std::string present, missing;
  for (const Peer& peer : Peers()) {
    if (!geo::GetGeoOptions().Wants(peer.name)) continue;
    Result<std::unique_ptr<geo::GeoTarget>> t = peer.open();
    if (t.ok()) {
      present += std::string(present.empty() ? "" : ", ") + peer.name;
    } else {
      missing += std::string("\n  ") + peer.name + ": " + t.status().message();
    }
  }
  std::fprintf(stderr, "geo: peers here: %s\n", present.empty() ? "none" : present.c_str());
  if (!missing.empty()) {
    std::fprintf(stderr,
                 "geo: *** PEERS MISSING (their cases are skipped; tools/setup installs "
                 "them):%s\n",
                 missing.c_str());
  }
}

const bool kRegistered = AddRegistration([] {
  const geo::GeoOptions& options = geo::GetGeoOptions();
  if (options.Wants("index")) {
    AddCase("geo_index/nearest500", BM_GeoIndexNearest)->Unit(benchmark::kMicrosecond);
    AddCase("geo_index/move", BM_GeoIndexMove)->Unit(benchmark::kMicrosecond);
    auto* build = AddCase("geo_index/build", BM_GeoIndexBuild);
    build->Arg(int64_t(Workload().points().size()))->Unit(benchmark::kMillisecond)->Iterations(3);
    if (Options().profile != Profile::kQuick) build->Arg(1'000'000);
  }
  MissingBanner();
  const char* names[] = {"insert", "search", "move", "move_sustained"};
  for (const Peer& peer : Peers()) {
    if (!options.Wants(peer.name)) continue;
    for (Phase phase : {Phase::kInsert, Phase::kSearch, Phase::kMove, Phase::kMoveSustained}) {
      AddCase("geo/" + std::string(peer.name) + "/" + names[int(phase)],
              [&peer, phase](benchmark::State& state) { BM_GeoPhase(state, peer, phase); })
          ->Iterations(1)
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond);
    }
  }
});

}  // namespace
}  // namespace skiff::bench
