// Comparison of two runs (BASE and HEAD): time verdicts, deterministic counter
// changes, info counters, added / removed / errored / skipped benchmarks, and
// the exit code that sums them up.
//
// Verdict rules (docs/benchmarks.md, "Comparing runs"), per benchmark that
// ran on both sides:
//   too few repetitions  fewer than min_repetitions samples on a side, or so
//                        few that the test cannot reach alpha at all;
//   unstable             coefficient of variation above max_cv_pct on a side,
//                        unless the change is significant, past the threshold
//                        and at least kNoiseMultiple times that spread;
//   faster / slower      Mann-Whitney p < alpha AND |median change| >=
//                        threshold_pct;
//   same                 otherwise.
// Judged counters (server CPU per operation, memory) get the same rules over
// their per-repetition values, reading "worse" / "better" in the direction
// their kind declares. A counter's kind is read from both runs: when they
// disagree it is judged as the stricter kind (deterministic, then judged, then
// info) and the change is listed; one that judges it less than BASE did fails
// the run like a changed counter, so that re-declaring a counter cannot
// silence it. A judged counter missing from HEAD is a row with no verdict.
// Every judged row also states the smallest change it could have seen
// (detectable_pct, see DetectablePct).
// Pure functions over values; thread-safe.
#ifndef SKIFF_COMPARE_COMPARISON_H_
#define SKIFF_COMPARE_COMPARISON_H_

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "compare/run.h"

namespace skiff::compare {

struct Settings {
  double alpha = 0.05;
  double threshold_pct = 5;
  std::optional<double> max_cv_pct;  // defaults to threshold_pct
  int min_repetitions = 3;
  bool cpu_time = false;  // judge cpu_time instead of real_time
  bool fail_on_slower = false;
  // Both sides come from one run (--filters): deterministic counters that
  // differ and cases on one side only are shown, not failures.
  bool within_run = false;

  double MaxCvPct() const { return max_cv_pct.value_or(threshold_pct); }
};

// Relative tolerance for "equal" deterministic counters: Google Benchmark
// prints doubles with 17 significant digits, and per-iteration averages
// (kAvgIterations) can differ in the last bits between runs.
inline constexpr double kCounterRelativeEpsilon = 1e-9;

// How many times the larger coefficient of variation a change must be for a
// noisy benchmark to get a verdict anyway.
inline constexpr double kNoiseMultiple = 3;

enum class Verdict { kSame, kFaster, kSlower, kUnstable, kTooFewRepetitions };
std::string_view VerdictName(Verdict v);  // "same", ..., "too few repetitions"

// Exit codes of skiff-compare, highest priority first when several apply:
// kUsage > kBadInput > kErrored > kCounterChanged > kSlower > kOk.
enum class ExitCode {
  kOk = 0,
  kCounterChanged = 1,
  kErrored = 2,  // errored in HEAD, or removed from HEAD
  kBadInput = 3,
  kSlower = 4,  // only with Settings::fail_on_slower
  kUsage = 64,  // bad arguments (the suite's usage code, docs/benchmarks.md)
};

struct SideStats {
  size_t samples = 0;
  double median_ns = 0;
  std::optional<double> cv_pct;  // needs at least 2 samples and a non-zero mean
};

struct TimeRow {
  std::string benchmark;
  // Empty for the case's time; else the judged counter this row judges (its
  // "samples" are the counter's values, not nanoseconds).
  std::string counter;
  bool higher_is_better = false;
  std::string time_unit;  // HEAD's display unit
  SideStats base;
  SideStats head;
  std::optional<double> diff_pct;  // (head - base) / base; none when base is 0
  std::optional<double> p_value;
  Verdict verdict = Verdict::kSame;
  // The smallest median change (%) this pair of sample sets could have been
  // given a verdict for; none when no verdict was possible.
  std::optional<double> detectable_pct;
  // Judged by time per item (1e9 / items_per_second) rather than per
  // iteration; see Compare().
  bool per_item = false;
  // Why a verdict could not be reached, and anything else a reader must know
  // to trust the row (a run cut short by its budget, aggregates only).
  std::vector<std::string> notes;

  // The notes joined with "; ".
  std::string note() const;
};

// As VerdictName, but a judged counter's row reads "worse" / "better".
std::string_view RowVerdictName(const TimeRow& row);

// A counter declared with one kind in BASE and another in HEAD.
struct KindChange {
  std::string counter;
  CounterKind base;
  CounterKind head;
};

struct CounterChange {
  std::string benchmark;
  std::string counter;
  std::string base;  // a value, "min..max" when it varied, or "absent"
  std::string head;
};

struct InfoCounter {
  std::string benchmark;
  std::string counter;
  std::optional<double> base;  // median over samples
  std::optional<double> head;
};

enum class Side { kBase, kHead };

struct Problem {
  std::string benchmark;
  Side side;
  std::string message;
};

struct Comparison {
  Settings settings;
  std::vector<TimeRow> rows;
  std::vector<TimeRow> judged;  // one per judged counter of a case on both sides
  std::vector<KindChange> kind_changes;
  std::vector<CounterChange> counter_changes;
  std::vector<CounterChange> new_counters;  // deterministic, absent in BASE: noted only
  std::vector<InfoCounter> info_counters;
  size_t deterministic_checked = 0;  // deterministic counters compared
  std::vector<std::string> added;    // in HEAD only
  std::vector<std::string> removed;  // in BASE only
  std::vector<Problem> errored;
  std::vector<Problem> skipped;
  ExitCode exit_code = ExitCode::kOk;
  std::string exit_reason;  // one line saying why exit_code was chosen
  // The two sides as compared (after SplitRun), so that the JSON report can
  // carry each run's own figures and its readers need no reader of their own.
  Run base_run;
  Run head_run;
};

// Times are judged per item when both sides report items_per_second in every
// sample (and --cpu-time is not given), else per iteration: a scenario cut
// short by its wall-time budget has the budget as its time per iteration,
// whatever its speed, but its rate still says how fast it went.
Comparison Compare(const Run& base, const Run& head, const Settings& settings);

// The fewest repetitions per side that can reach a verdict under `settings`
// (at least min_repetitions, and enough for the exact test to reach alpha).
int RepetitionsForVerdict(const Settings& settings);

// The two sides of one run for --filters: benchmarks whose name matches
// `base_pattern` (ECMAScript regex, searched) form BASE and those matching
// `head_pattern` form HEAD, each renamed with its first match replaced by
// "*" so that "BM_Write/sqlite" and "BM_Write/postgres" pair up as
// "BM_Write/*". bad_request for an invalid pattern.
Result<std::pair<Run, Run>> SplitRun(const Run& run, const std::string& base_pattern,
                                     const std::string& head_pattern);

// The smallest change (%) the verdict rules could call faster or slower for
// these samples: at least the threshold; at least the shift that would make
// each side significantly different (Mann-Whitney p < alpha) from itself
// scaled by that shift, which is what its own spread allows; and at least
// kNoiseMultiple times the larger CV on a noisy side. An estimate from the
// observed spread (on an A/A pair, what the run can see); none when a side
// has too few samples for any verdict.
std::optional<double> DetectablePct(const std::vector<double>& base,
                                    const std::vector<double>& head, const Settings& settings);

// "time" for a time row; the counter's name for a judged one.
std::string RowMeasure(const TimeRow& row);

// The statistics of one side's samples (exposed for tests).
SideStats Summarize(const std::vector<double>& samples_ns);

// The verdict for one pair of sample sets (exposed for tests).
TimeRow JudgeTimes(std::string_view name, const std::vector<double>& base_ns,
                   const std::vector<double>& head_ns, const Settings& settings);

}  // namespace skiff::compare

#endif  // SKIFF_COMPARE_COMPARISON_H_
