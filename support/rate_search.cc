#include "support/rate_search.h"

namespace skiff::bench {
namespace {

RateProbe Judge(double target, const RunResult& run, double p99_bound_us) {
  RateProbe p;
  p.target = target;
  p.achieved = run.wall_seconds > 0 ? double(run.ops) / run.wall_seconds : 0;
  p.p99_us = run.latency.Summarize().p99_us;
  p.errors = run.error_count();
  p.held = p.errors == 0 && run.ops > 0 && p.p99_us <= p99_bound_us &&
           (target == 0 || p.achieved >= 0.95 * target);
  return p;
}

// Runs `run` at `rate`, adds its judgement to `search` and returns it.
const RateProbe& Record(const std::function<RunResult(double rate)>& run, double rate,
                        double p99_bound_us, RateSearch* search) {
  const RunResult r = run(rate);
  search->mismatches += r.errors_of(ErrorKind::kMismatch);
  if (search->first_error.empty()) search->first_error = r.first_error;
  search->probes.push_back(Judge(rate, r, p99_bound_us));
  return search->probes.back();
}

}  // namespace

RateSearch FindSustainableRate(const std::function<RunResult(double rate)>& probe,
                               double p99_bound_us, int steps) {
  RateSearch search;
  auto run = [&](double rate) { return Record(probe, rate, p99_bound_us, &search); };
  const RateProbe closed = run(0);
  if (closed.errors > 0 || closed.achieved <= 0) return search;
  search.capacity = closed.achieved;
  double low = 0, high = closed.achieved;
  for (int i = 0; i < steps; ++i) {
    const double middle = (low + high) / 2;
    if (run(middle).held) {
      low = middle;
      search.sustainable = middle;
    } else {
      high = middle;
    }
  }
  return search;
}

void ConfirmSustainableRate(const std::function<RunResult(double rate)>& run, double p99_bound_us,
                            int tries, RateSearch* search) {
  double rate = search->sustainable;
  search->sustainable = 0;
  search->confirmed = false;
  if (rate <= 0) return;
  for (int i = 0; i < tries; ++i, rate *= 0.75) {
    ++search->confirmation_runs;
    if (Record(run, rate, p99_bound_us, search).held) {
      search->sustainable = rate;
      search->confirmed = true;
      return;
    }
  }
}

}  // namespace skiff::bench
