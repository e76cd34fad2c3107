#include "support/rate_search.h"

#include <algorithm>
#include <cstdio>

namespace skiff::bench {
namespace {

template <typename... Args>
std::string Printf(const char* format, Args... args) {
  char text[200];
  std::snprintf(text, sizeof text, format, args...);
  return text;
}

// Why a probe at `target` is void, or empty when the client kept the
// schedule (see the header).
std::string WhyVoid(double target, const RunResult& run, double p99_bound_us) {
  const double n = double(std::max<uint64_t>(run.ops, 1));
  const double allowed = kVoidLateFraction * n;
  if (double(run.late_on_client()) > allowed) {
    return Printf("the client fell behind: %.1f %% of requests went out over 1 ms late",
                  100 * double(run.late_on_client()) / n);
  }
  const double slots_needed = target * p99_bound_us * 1e-6;
  if (double(run.late_waiting_for_slot) > allowed && double(run.slots) < slots_needed) {
    return Printf(
        "%.1f %% of requests waited for a slot, and %.0f slots cannot carry this rate "
        "at the bound (%.0f needed)",
        100 * double(run.late_waiting_for_slot) / n, double(run.slots), slots_needed);
  }
  return {};
}

// Why a probe that kept its schedule failed, or empty when it held.
std::string WhyFailed(const RateProbe& p, const RunResult& run, double p99_bound_us) {
  if (p.errors > 0) return Printf("%.0f errors", double(p.errors)) + " (" + run.first_error + ")";
  if (p.ops == 0) return "no request completed";
  if (p.p99_us > p99_bound_us) {
    return Printf("p99 %.1f ms over %.1f ms", p.p99_us / 1000, p99_bound_us / 1000);
  }
  if (p.achieved < 0.95 * p.target) {
    return Printf("%.0f/s achieved, %.0f %% of the rate", p.achieved, 100 * p.achieved / p.target);
  }
  return {};
}

// Runs `run` at `rate`, adds its verdict to `search` and returns it.
RateProbe Record(const std::function<RunResult(double rate)>& run, double rate, double p99_bound_us,
                 bool repeat, RateSearch* search) {
  const RunResult r = run(rate);
  search->mismatches += r.errors_of(ErrorKind::kMismatch);
  if (search->first_error.empty()) search->first_error = r.first_error;
  RateProbe p = JudgeProbe(rate, r, p99_bound_us);
  p.repeat = repeat;
  if (p.verdict == ProbeVerdict::kVoid) {
    ++search->void_probes;
    search->client_limit = search->client_limit > 0 ? std::min(search->client_limit, rate) : rate;
  }
  search->probes.push_back(p);
  return p;
}

// The highest rate above `rate` that held; 0 when none.
double HeldAbove(const RateSearch& search, double rate) {
  double held = 0;
  for (const RateProbe& p : search.probes) {
    if (p.verdict == ProbeVerdict::kHeld && p.target > rate) held = std::max(held, p.target);
  }
  return held;
}

}  // namespace

const char* ProbeVerdictName(ProbeVerdict verdict) {
  switch (verdict) {
    case ProbeVerdict::kClosedLoop:
      return "closed loop";
    case ProbeVerdict::kHeld:
      return "held";
    case ProbeVerdict::kFailed:
      return "failed";
    case ProbeVerdict::kVoid:
      return "void";
  }
  return "unknown";
}

RateProbe JudgeProbe(double target, const RunResult& run, double p99_bound_us) {
  RateProbe p;
  p.target = target;
  p.achieved = run.wall_seconds > 0 ? double(run.ops) / run.wall_seconds : 0;
  p.p99_us = run.latency.Summarize().p99_us;
  p.ops = run.ops;
  p.errors = run.error_count();
  p.late_on_client = run.late_on_client();
  p.late_for_slot = run.late_waiting_for_slot;
  if (target == 0) {
    p.verdict = ProbeVerdict::kClosedLoop;
    return p;
  }
  // Errors are the server's whatever the schedule; a late client only makes
  // the latency and the rate unreadable.
  if (p.errors == 0) p.why = WhyVoid(target, run, p99_bound_us);
  if (!p.why.empty()) {
    p.verdict = ProbeVerdict::kVoid;
    return p;
  }
  p.why = WhyFailed(p, run, p99_bound_us);
  p.verdict = p.why.empty() ? ProbeVerdict::kHeld : ProbeVerdict::kFailed;
  return p;
}

RateSearch FindSustainableRate(const std::function<RunResult(double rate)>& probe,
                               double p99_bound_us, int steps) {
  RateSearch search;
  const RateProbe closed = Record(probe, 0, p99_bound_us, false, &search);
  if (closed.errors > 0 || closed.achieved <= 0) return search;
  search.capacity = closed.achieved;
  double low = 0, high = closed.achieved;
  for (int i = 0; i < steps; ++i) {
    const double middle = (low + high) / 2;
    if (Record(probe, middle, p99_bound_us, false, &search).verdict == ProbeVerdict::kHeld) {
      low = middle;
      search.sustainable = middle;
    } else {
      high = middle;  // failed, or void: the client's limit is not passed either
    }
  }
  search.found = search.sustainable;
  return search;
}

void ConfirmSustainableRate(const std::function<RunResult(double rate)>& run, double p99_bound_us,
                            int tries, RateSearch* search) {
  double rate = search->sustainable;
  search->sustainable = 0;
  search->confirmed = false;
  if (rate <= 0) return;
  auto once = [&](double r, bool repeat) {
    ++search->confirmation_runs;
    return Record(run, r, p99_bound_us, repeat, search);
  };
  for (int i = 0; i < tries; ++i, rate *= 0.75) {
    const double held_above = HeldAbove(*search, rate);
    RateProbe p = once(rate, false);
    if (p.verdict == ProbeVerdict::kFailed && held_above > 0) {
      ++search->inversions;
      if (search->inversion.empty()) {
        search->inversion =
            Printf("%.0f/s failed below %.0f/s, which held", rate, held_above) + " (" + p.why + ")";
      }
      p = once(rate, true);
      if (p.verdict == ProbeVerdict::kFailed) {
        search->monotonic = false;
        return;
      }
    }
    if (p.verdict == ProbeVerdict::kHeld) {
      search->sustainable = rate;
      search->confirmed = true;
      return;
    }
  }
}

}  // namespace skiff::bench
