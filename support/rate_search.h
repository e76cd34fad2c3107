// The sustainable rate of a scenario: the highest open-loop request rate at
// which the p99 latency stays under a bound and no request fails, found by
// a bounded search of short probes (support/load_driver.h's open loop, so a
// probe's latency counts from when each request was due).
//
// The search first runs one closed-loop probe for the rate the pool reaches
// when it never waits (the capacity), then halves the interval [0, capacity]
// `steps` times: a probe at the middle that holds moves the lower end up,
// one that does not moves the upper end down. The answer is the highest
// rate that held (0 when none did), known to within capacity / 2^steps.
//
// A short probe that held is not yet a sustained rate: a backlog that grows
// slowly (a committer falling behind) may show only in a later run.
// ConfirmSustainableRate runs the answer again, and steps down when that
// run does not hold.
#ifndef SKIFF_SUPPORT_RATE_SEARCH_H_
#define SKIFF_SUPPORT_RATE_SEARCH_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "support/load_driver.h"

namespace skiff::bench {

struct RateProbe {
  double target = 0;    // requests per second asked for; 0 = closed loop
  double achieved = 0;  // replies per second of wall time
  double p99_us = 0;
  uint64_t errors = 0;
  bool held = false;  // no error, p99 within the bound, achieved >= 95 % of target
};

struct RateSearch {
  double capacity = 0;     // the closed loop's replies per second
  double sustainable = 0;  // the highest target that held; 0 when none did
  // Set by ConfirmSustainableRate: runs made, and whether `sustainable` is
  // a rate one of them held (otherwise it is 0).
  int confirmation_runs = 0;
  bool confirmed = false;
  std::vector<RateProbe> probes;
  uint64_t mismatches = 0;  // wrong answers in any probe (fail the case)
  std::string first_error;
};

// `probe(rate)` runs one probe at `rate` (0: closed loop) and returns what
// the driver measured.
RateSearch FindSustainableRate(const std::function<RunResult(double rate)>& probe,
                               double p99_bound_us, int steps);

// Runs `run(rate)` at search->sustainable; while a run does not hold, again
// at 3/4 of the last rate, `tries` runs at most. Leaves in `sustainable` the
// rate of the run that held, or 0 when none did (or the search found none,
// in which case nothing runs). The runs are appended to `probes`.
void ConfirmSustainableRate(const std::function<RunResult(double rate)>& run, double p99_bound_us,
                            int tries, RateSearch* search);

}  // namespace skiff::bench

#endif  // SKIFF_SUPPORT_RATE_SEARCH_H_
