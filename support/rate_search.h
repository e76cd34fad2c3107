// The sustainable rate of a scenario: the highest open-loop request rate at
// which the p99 latency stays under a bound and no request fails, found by
// a bounded search of probes (support/load_driver.h's open loop, so a
// probe's latency counts from when each request was due).
//
// Each open-loop probe gets one of three verdicts:
// - void: the client could not keep the schedule, so the probe says nothing
//   about the server. More than kVoidLateFraction of its requests went out
//   late because the client's thread was behind, or waited for a slot while
//   the pool was too small for the rate (fewer slots than rate x bound: a
//   full pool then does not mean the server missed the bound).
// - failed: an error, a p99 over the bound, or under 95 % of the rate
//   achieved.
// - held: none of these.
//
// The search first runs one closed-loop probe for the rate the pool reaches
// when it never waits (the capacity), then halves the interval [0, capacity]
// `steps` times: a probe at the middle that holds moves the lower end up, a
// failed or void one moves the upper end down. A void probe is the client's
// limit: no rate at or above it is claimed. The answer is the highest rate
// that held (0 when none did), known to within capacity / 2^steps.
//
// A short probe that held is not yet a sustained rate: a backlog that grows
// slowly (a committer falling behind) may show only in a later run.
// ConfirmSustainableRate runs the answer again, and steps down when that run
// does not hold. Rates must be monotonic: a rate that fails below one that
// held is an inversion, counted and probed once more (a one-off stall of a
// shared machine should not decide the answer); when it fails again the
// search is not monotonic and claims no rate, since the outcome then
// depends on when a rate was tried rather than on the rate.
#ifndef SKIFF_SUPPORT_RATE_SEARCH_H_
#define SKIFF_SUPPORT_RATE_SEARCH_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "support/load_driver.h"

namespace skiff::bench {

// The share of a probe's requests that may go out late for the client
// before the probe is void.
inline constexpr double kVoidLateFraction = 0.01;

enum class ProbeVerdict { kClosedLoop, kHeld, kFailed, kVoid };
const char* ProbeVerdictName(ProbeVerdict verdict);

struct RateProbe {
  double target = 0;    // requests per second asked for; 0 = closed loop
  double achieved = 0;  // replies per second of wall time
  double p99_us = 0;
  uint64_t ops = 0;
  uint64_t errors = 0;
  uint64_t late_on_client = 0;  // late while the client's thread was behind
  uint64_t late_for_slot = 0;   // late while every slot was busy
  ProbeVerdict verdict = ProbeVerdict::kFailed;
  bool repeat = false;  // a second run of a rate that failed below one that held
  std::string why;      // what decided a failed or void verdict
};

struct RateSearch {
  double capacity = 0;  // the closed loop's replies per second
  double found = 0;     // the search's answer, before confirmation
  // The highest rate that held; 0 when none did or the search is not
  // monotonic. ConfirmSustainableRate leaves in it the rate of the run
  // that held.
  double sustainable = 0;
  double client_limit = 0;  // the lowest void probe's rate; 0 when none
  int void_probes = 0;
  int inversions = 0;     // rates that failed below a rate that held
  bool monotonic = true;  // false when an inversion failed again
  std::string inversion;  // the first inversion, for the verdict message
  // Set by ConfirmSustainableRate: runs made, and whether `sustainable` is
  // a rate one of them held (otherwise it is 0).
  int confirmation_runs = 0;
  bool confirmed = false;
  std::vector<RateProbe> probes;
  uint64_t mismatches = 0;  // wrong answers in any probe (fail the case)
  std::string first_error;
};

// The verdict on one run at `target` (0: closed loop).
RateProbe JudgeProbe(double target, const RunResult& run, double p99_bound_us);

// `probe(rate)` runs one probe at `rate` (0: closed loop) and returns what
// the driver measured.
RateSearch FindSustainableRate(const std::function<RunResult(double rate)>& probe,
                               double p99_bound_us, int steps);

// Runs `run(rate)` at search->sustainable; while a run does not hold, again
// at 3/4 of the last rate, `tries` rates at most. A rate that fails below
// one that held is run once more (see above). Leaves in `sustainable` the
// rate of the run that held, or 0 when none did, the search found none (in
// which case nothing runs) or an inversion failed twice. The runs are
// appended to `probes`.
void ConfirmSustainableRate(const std::function<RunResult(double rate)>& run, double p99_bound_us,
                            int tries, RateSearch* search);

}  // namespace skiff::bench

#endif  // SKIFF_SUPPORT_RATE_SEARCH_H_
