// GeoSession: one target taken through the geo benchmark's phases with the
// same client shape for every target: `connections` connections, each driven
// by its own thread with one request in flight, every reply parsed by the
// target's client.
//
//   Insert()          every point once, ids handed out from a shared counter
//   Search()          the workload's queries from a shared counter, until a
//                     wall-time budget or a query cap (budget_cut says which)
//   PinnedMoves()     the 5,000 pinned moves, each id on its own connection
//   SustainedMoves()  random moves per connection until a budget
//
// A phase measures wall time, latency per request, the target's server CPU
// and this process's CPU over exactly the span its threads run. The session
// tracks where every point is (a move counts once acknowledged), so the
// checks can hold the target's answers against the brute-force oracle on the
// current places. Not thread-safe: one benchmark thread drives it.
#ifndef SKIFF_SUPPORT_GEO_GEO_SESSION_H_
#define SKIFF_SUPPORT_GEO_GEO_SESSION_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "support/geo/geo_oracle.h"
#include "support/geo/geo_target.h"
#include "support/geo/geo_workload.h"
#include "support/latency.h"

namespace skiff::bench::geo {

struct PhaseResult {
  uint64_t ops = 0;
  uint64_t errors = 0;
  std::string first_error;
  double wall_seconds = 0;
  double server_cpu_seconds = 0;
  double client_cpu_seconds = 0;  // this process; for an in-process target it holds the server
  bool budget_cut = false;        // stopped by the wall-time budget, not by its cap
  LatencyRecorder latency;
};

struct PhaseBudget {
  std::chrono::nanoseconds wall{0};
  uint64_t max_ops = 0;
};

class GeoSession {
 public:
  GeoSession(std::unique_ptr<GeoTarget> target, const GeoWorkload& workload, size_t connections);
  ~GeoSession();
  GeoSession(const GeoSession&) = delete;
  GeoSession& operator=(const GeoSession&) = delete;

  GeoTarget& target() { return *target_; }
  bool inserted() const { return inserted_; }

  // Resets the target to an empty point set and opens the connections.
  Status Open();

  PhaseResult Insert();
  // Keeps the answers to queries [0, keep) for CheckQueries.
  PhaseResult Search(PhaseBudget budget, size_t keep);
  PhaseResult PinnedMoves();
  PhaseResult SustainedMoves(PhaseBudget budget);

  // The first `n` workload queries held against the oracle on the current
  // places, within the target's tolerance: the answers Search() kept, and
  // for the rest (or all, when none were kept) answers asked now on one
  // connection. Kept answers are used once. A failed request is an error;
  // differences are counted in the summary (`unexplained`).
  Result<CheckSummary> CheckQueries(size_t n);

  // Each of `ids` is found at its current place, and not at its first place
  // any more (unless it moved back within the target's distance error).
  // Returns how many were found at their current place (all of them; the
  // first that is not is an error).
  Result<size_t> CheckMoved(const std::vector<uint64_t>& ids);

  // Ids moved by SustainedMoves so far, smallest first, at most `n`.
  std::vector<uint64_t> SustainedMovedIds(size_t n) const;

 private:
  struct Worker;
  template <typename Body>
  PhaseResult RunPhase(Body body);
  double DistanceTolerance() const;

  std::unique_ptr<GeoTarget> target_;
  const GeoWorkload& workload_;
  size_t connections_;
  std::vector<std::unique_ptr<GeoConnection>> conns_;  // closed before target_ goes
  std::vector<GeoPoint> places_;                       // by id - 1
  std::vector<std::optional<std::vector<GeoHit>>> kept_;
  std::vector<std::vector<uint64_t>> sustained_ids_;  // per connection
  bool inserted_ = false;
};

}  // namespace skiff::bench::geo

#endif  // SKIFF_SUPPORT_GEO_GEO_SESSION_H_
