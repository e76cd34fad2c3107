#include "support/geo/geo_session.h"

#include <algorithm>
#include <atomic>
#include <set>
#include <thread>

#include "support/process.h"

namespace skiff::bench::geo {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

// What one connection's thread did in a phase.
struct GeoSession::Worker {
  LatencyRecorder latency;
  uint64_t ops = 0;
  uint64_t errors = 0;
  std::string first_error;

  // Runs one request, timed; false (and the phase stops for this
  // connection) when it failed.
  template <typename Op>
  bool Do(Op&& op) {
    const auto t0 = Clock::now();
    const Status s = op();
    latency.Record(Clock::now() - t0);
    if (s.ok()) {
      ++ops;
      return true;
    }
    if (errors++ == 0) first_error = s.ToString();
    return false;
  }
};

GeoSession::GeoSession(std::unique_ptr<GeoTarget> target, const GeoWorkload& workload,
                       size_t connections)
    : target_(std::move(target)),
      workload_(workload),
      connections_(connections),
      sustained_ids_(connections) {}

GeoSession::~GeoSession() { conns_.clear(); }

Status GeoSession::Open() {
  conns_.clear();
  inserted_ = false;
  kept_.clear();
  for (auto& ids : sustained_ids_) ids.clear();
  SKIFF_RETURN_IF_ERROR(target_->Reset());
  for (size_t i = 0; i < connections_; ++i) {
    Result<std::unique_ptr<GeoConnection>> c = target_->Connect();
    if (!c.ok()) return c.status();
    conns_.push_back(std::move(*c));
  }
  places_ = workload_.points();
  return Status::Ok();
}

template <typename Body>
PhaseResult GeoSession::RunPhase(Body body) {
  std::vector<Worker> workers(conns_.size());
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (size_t c = 0; c < conns_.size(); ++c) {
    threads.emplace_back([&, c] {
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      body(c, *conns_[c], workers[c]);
    });
  }
  PhaseResult r;
  const double server0 = target_->ServerCpu();
  const double client0 = support::ProcessCpuSeconds();
  const auto start = Clock::now();
  go.store(true, std::memory_order_release);
  for (std::thread& t : threads) t.join();
  r.wall_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  r.server_cpu_seconds = target_->ServerCpu() - server0;
  r.client_cpu_seconds = support::ProcessCpuSeconds() - client0;
  for (const Worker& w : workers) {
    r.ops += w.ops;
    r.errors += w.errors;
    if (r.first_error.empty()) r.first_error = w.first_error;
    r.latency.Merge(w.latency);
  }
  return r;
}

PhaseResult GeoSession::Insert() {
  const std::vector<GeoPoint>& points = workload_.points();
  std::atomic<size_t> next{0};
  PhaseResult r = RunPhase([&](size_t, GeoConnection& conn, Worker& w) {
    for (size_t i; (i = next.fetch_add(1)) < points.size();) {
      if (!w.Do([&] { return conn.Insert(points[i]); })) return;
    }
  });
  inserted_ = r.errors == 0;
  places_ = points;
  return r;
}

PhaseResult GeoSession::Search(PhaseBudget budget, size_t keep) {
  const size_t cap = std::min<size_t>(budget.max_ops, workload_.query_count());
  kept_.assign(std::min(keep, cap), std::nullopt);
  std::atomic<size_t> next{0};
  std::atomic<bool> cut{false};
  const auto deadline = Clock::now() + budget.wall;
  PhaseResult r = RunPhase([&](size_t, GeoConnection& conn, Worker& w) {
    std::vector<GeoHit> hits;
    for (;;) {
      if (Clock::now() >= deadline) {
        cut = true;
        return;
      }
      const size_t i = next.fetch_add(1);
      if (i >= cap) return;
      const GeoSearch q = workload_.Query(i);
      const bool ok = w.Do([&]() -> Status {
        SKIFF_RETURN_IF_ERROR(conn.Search(q, &hits));
        if (hits.size() > q.limit) return Internal("more points than the limit");
        return Status::Ok();
      });
      if (!ok) return;
      if (i < kept_.size()) kept_[i] = hits;
    }
  });
  r.budget_cut = cut.load();
  return r;
}

PhaseResult GeoSession::PinnedMoves() {
  return RunPhase([&](size_t c, GeoConnection& conn, Worker& w) {
    for (const GeoPoint& m : workload_.PinnedMoves(c, conns_.size())) {
      if (!w.Do([&] { return conn.Move(m); })) return;
      places_[m.id - 1] = m;  // this connection is the only writer of this id
    }
  });
}

PhaseResult GeoSession::SustainedMoves(PhaseBudget budget) {
  const uint64_t per_connection = std::max<uint64_t>(1, budget.max_ops / conns_.size());
  const auto deadline = Clock::now() + budget.wall;
  std::atomic<bool> cut{false};
  PhaseResult r = RunPhase([&](size_t c, GeoConnection& conn, Worker& w) {
    GeoWorkload::MoveStream stream(c, conns_.size(), places_.size());
    for (uint64_t n = 0; n < per_connection; ++n) {
      if (Clock::now() >= deadline) {
        cut = true;
        return;
      }
      const GeoPoint m = stream.Next();
      if (!w.Do([&] { return conn.Move(m); })) return;
      places_[m.id - 1] = m;
      sustained_ids_[c].push_back(m.id);
    }
  });
  r.budget_cut = cut.load();
  return r;
}

Result<CheckSummary> GeoSession::CheckQueries(size_t n) {
  const GeoSemantics semantics = target_->Semantics();
  CheckSummary summary;
  std::vector<GeoHit> asked;
  for (size_t i = 0; i < n && i < workload_.query_count(); ++i) {
    const GeoSearch q = workload_.Query(i);
    const std::vector<GeoHit>* got = nullptr;
    if (i < kept_.size() && kept_[i].has_value()) {
      got = &*kept_[i];
    } else {
      SKIFF_RETURN_IF_ERROR(conns_[0]->Search(q, &asked));
      got = &asked;
    }
    summary.Add(CheckAnswer(*got, BruteForceNearest(places_, q, semantics.box), places_, q,
                            semantics.box, semantics.tolerance));
  }
  kept_.clear();
  return summary;
}

double GeoSession::DistanceTolerance() const {
  const GeoTolerance& t = target_->Semantics().tolerance;
  return std::max(t.dist_m + t.dist_rel * kBoxM, 1e-3);
}

Result<size_t> GeoSession::CheckMoved(const std::vector<uint64_t>& ids) {
  const double tolerance = DistanceTolerance();
  std::vector<GeoHit> hits;
  size_t found_at_new = 0;
  for (uint64_t id : ids) {
    const GeoPoint& now = places_[id - 1];
    const GeoPoint& first = workload_.points()[id - 1];
    GeoSearch at_new{now.lat, now.lon, 10, kBoxM};
    SKIFF_RETURN_IF_ERROR(conns_[0]->Search(at_new, &hits));
    const bool found = std::any_of(hits.begin(), hits.end(), [&](const GeoHit& h) {
      return h.id == id && h.dist_m <= tolerance;
    });
    if (!found) return Internal("id " + std::to_string(id) + " is not found at its new place");
    ++found_at_new;
    const double moved_m = GreatCircleM(first.lat, first.lon, now.lat, now.lon);
    if (moved_m <= 2 * tolerance) continue;
    GeoSearch at_old{first.lat, first.lon, 10, kBoxM};
    SKIFF_RETURN_IF_ERROR(conns_[0]->Search(at_old, &hits));
    for (const GeoHit& h : hits) {
      if (h.id == id && h.dist_m <= tolerance) {
        return Internal("id " + std::to_string(id) + " is still found at its first place");
      }
    }
  }
  return found_at_new;
}

std::vector<uint64_t> GeoSession::SustainedMovedIds(size_t n) const {
  std::set<uint64_t> ids;
  for (const auto& per : sustained_ids_) ids.insert(per.begin(), per.end());
  std::vector<uint64_t> out(ids.begin(), ids.end());
  if (out.size() > n) out.resize(n);
  return out;
}

}  // namespace skiff::bench::geo
