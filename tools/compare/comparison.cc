#include "compare/comparison.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <regex>
#include <set>

#include "compare/format.h"
#include "compare/mann_whitney.h"

namespace skiff::compare {
namespace {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

bool CounterEqual(double a, double b) {
  const double scale = std::max({1.0, std::fabs(a), std::fabs(b)});
  return std::fabs(a - b) <= kCounterRelativeEpsilon * scale;
}

// One side's deterministic value: the value when every sample agrees, else
// "min..max" so the report shows that it varied within the run.
struct DeterministicValue {
  bool present = false;
  bool constant = true;
  double value = 0;
  std::string text = "absent";
};

DeterministicValue Describe(const BenchmarkResult& b, const std::string& counter) {
  DeterministicValue d;
  auto it = b.counters.find(counter);
  if (it == b.counters.end() || it->second.empty()) return d;
  const auto& v = it->second;
  d.present = true;
  d.value = v.front();
  auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  d.constant = CounterEqual(*lo, *hi);
  d.text = d.constant ? FormatNumber(d.value) : FormatNumber(*lo) + ".." + FormatNumber(*hi);
  // Samples that stop short of the repetition count mean the counter was
  // missing from some rows.
  if (d.constant && v.size() != b.real_ns.size()) {
    d.constant = false;
    d.text += " (missing in some repetitions)";
  }
  return d;
}

// How much a kind judges: a counter declared differently by the two runs is
// judged as the stricter of the two.
int Strictness(CounterKind kind) {
  switch (kind) {
    case CounterKind::kDeterministic:
      return 2;
    case CounterKind::kJudgedLower:
    case CounterKind::kJudgedHigher:
      return 1;
    case CounterKind::kInfo:
      return 0;
  }
  return 0;
}

CounterKind KindOf(const std::string& counter, const Run& base, const Run& head) {
  auto in_head = head.counter_kinds.find(counter);
  auto in_base = base.counter_kinds.find(counter);
  const bool h = in_head != head.counter_kinds.end(), b = in_base != base.counter_kinds.end();
  if (h && b) {
    return Strictness(in_base->second) > Strictness(in_head->second) ? in_base->second
                                                                     : in_head->second;
  }
  if (h) return in_head->second;
  if (b) return in_base->second;
  return CounterKind::kInfo;
}

void FindKindChanges(const Run& base, const Run& head, Comparison* out) {
  for (const auto& [name, head_kind] : head.counter_kinds) {
    auto it = base.counter_kinds.find(name);
    if (it != base.counter_kinds.end() && it->second != head_kind) {
      out->kind_changes.push_back({name, it->second, head_kind});
    }
  }
}

// A change that judges a counter less than BASE did (deterministic to
// judged or info, judged to info) is what could silence a regression; one
// that judges it more is listed only.
bool Loosened(const KindChange& k) { return Strictness(k.head) < Strictness(k.base); }

const std::vector<double>* Values(const BenchmarkResult& r, const std::string& counter) {
  auto it = r.counters.find(counter);
  return it == r.counters.end() || it->second.empty() ? nullptr : &it->second;
}

// A judged counter's row: the time rules over its values, in its direction.
void JudgeCounter(const BenchmarkResult& b, const BenchmarkResult& h, const std::string& name,
                  CounterKind kind, const Settings& settings, Comparison* out) {
  const std::vector<double>* bv = Values(b, name);
  const std::vector<double>* hv = Values(h, name);
  if (bv == nullptr && hv != nullptr) {
    // New in HEAD: shown, as a new deterministic counter is.
    out->info_counters.push_back({b.name, name, std::nullopt, Median(*hv)});
    return;
  }
  if (hv == nullptr) {
    // Gone from HEAD: a judged figure that stops being reported would
    // silence its regressions, so it is a row that could get no verdict.
    TimeRow row;
    row.benchmark = b.name;
    row.counter = name;
    row.higher_is_better = kind == CounterKind::kJudgedHigher;
    if (bv != nullptr) row.base = Summarize(*bv);
    row.verdict = Verdict::kTooFewRepetitions;
    row.notes.push_back(name + " is missing in HEAD: nothing to judge");
    out->judged.push_back(std::move(row));
    return;
  }
  TimeRow row = JudgeTimes(b.name, *bv, *hv, settings);
  row.counter = name;
  row.higher_is_better = kind == CounterKind::kJudgedHigher;
  if (row.higher_is_better && row.verdict == Verdict::kSlower) {
    row.verdict = Verdict::kFaster;
  } else if (row.higher_is_better && row.verdict == Verdict::kFaster) {
    row.verdict = Verdict::kSlower;
  }
  out->judged.push_back(std::move(row));
}

void CompareCounters(const BenchmarkResult& b, const BenchmarkResult& h, const Run& base,
                     const Run& head, Comparison* out) {
  std::set<std::string> names;
  for (const auto& [name, values] : b.counters) names.insert(name);
  for (const auto& [name, values] : h.counters) names.insert(name);
  for (const std::string& name : names) {
    const CounterKind kind = KindOf(name, base, head);
    if (kind == CounterKind::kJudgedLower || kind == CounterKind::kJudgedHigher) {
      JudgeCounter(b, h, name, kind, out->settings, out);
      continue;
    }
    if (kind == CounterKind::kDeterministic) {
      DeterministicValue bv = Describe(b, name);
      DeterministicValue hv = Describe(h, name);
      CounterChange change{b.name, name, bv.text, hv.text};
      ++out->deterministic_checked;
      if (!bv.present) {
        out->new_counters.push_back(std::move(change));
      } else if (!hv.present || !bv.constant || !hv.constant || !CounterEqual(bv.value, hv.value)) {
        out->counter_changes.push_back(std::move(change));
      }
      continue;
    }
    InfoCounter info{b.name, name, std::nullopt, std::nullopt};
    if (auto it = b.counters.find(name); it != b.counters.end() && !it->second.empty()) {
      info.base = Median(it->second);
    }
    if (auto it = h.counters.find(name); it != h.counters.end() && !it->second.empty()) {
      info.head = Median(it->second);
    }
    out->info_counters.push_back(std::move(info));
  }
}

void NoteProblem(const BenchmarkResult& r, Side side, Comparison* out) {
  if (r.state == RunState::kErrored) out->errored.push_back({r.name, side, r.error_message});
  if (r.state == RunState::kSkipped) out->skipped.push_back({r.name, side, r.error_message});
}

// "8 compared (6 same, 2 unstable)": how much of the comparison a verdict
// rests on, so "all clear" never hides that nothing could be judged.
std::string Summary(const std::vector<TimeRow>& rows, const std::string& what, size_t* judged) {
  std::map<Verdict, size_t> counts;
  for (const TimeRow& r : rows) ++counts[r.verdict];
  *judged = counts[Verdict::kSame] + counts[Verdict::kFaster] + counts[Verdict::kSlower];
  std::string parts;
  for (Verdict v : {Verdict::kSame, Verdict::kFaster, Verdict::kSlower, Verdict::kUnstable,
                    Verdict::kTooFewRepetitions}) {
    if (counts[v] == 0) continue;
    // Judged counters read "worse" / "better" where times read slower / faster.
    TimeRow example;
    example.verdict = v;
    if (!rows.empty()) example.counter = rows.front().counter;
    parts += (parts.empty() ? "" : ", ") + std::to_string(counts[v]) + " " +
             std::string(RowVerdictName(example));
  }
  return std::to_string(rows.size()) + " " + what + (parts.empty() ? "" : " (" + parts + ")");
}

std::string JudgedSummary(const Comparison& c, size_t* judged, size_t* total) {
  size_t judged_counters = 0;
  std::string out = Summary(c.rows, "compared", judged);
  *total = c.rows.size() + c.judged.size();
  if (!c.judged.empty()) {
    out += "; " + Summary(c.judged, "judged counters", &judged_counters);
    *judged += judged_counters;
  }
  return out;
}

std::string KindChangeReason(const Comparison& c, size_t* loosened) {
  std::string names;
  *loosened = 0;
  for (const KindChange& k : c.kind_changes) {
    if (!Loosened(k)) continue;
    ++*loosened;
    names += (names.empty() ? "" : ", ") + k.counter;
  }
  return std::to_string(*loosened) + " counter(s) judged less than in BASE (" + names + ")";
}

void ChooseExitCode(Comparison* c) {
  auto head_errors = std::count_if(c->errored.begin(), c->errored.end(),
                                   [](const Problem& p) { return p.side == Side::kHead; });
  const bool removed_fails = !c->settings.within_run && !c->removed.empty();
  if (head_errors > 0 || removed_fails) {
    c->exit_code = ExitCode::kErrored;
    std::string reason;
    if (head_errors > 0) reason = std::to_string(head_errors) + " benchmark(s) errored in HEAD";
    if (removed_fails) {
      reason += (reason.empty() ? "" : ", ") + std::to_string(c->removed.size()) +
                " benchmark(s) removed from HEAD";
    }
    c->exit_reason = reason;
    return;
  }
  size_t loosened = 0;
  const std::string kind_reason = KindChangeReason(*c, &loosened);
  const bool counters_changed = !c->counter_changes.empty() && !c->settings.within_run;
  const bool kinds_loosened = loosened > 0 && !c->settings.within_run;
  if (counters_changed || kinds_loosened) {
    c->exit_code = ExitCode::kCounterChanged;
    std::string reason;
    if (counters_changed) {
      reason = std::to_string(c->counter_changes.size()) + " deterministic counter(s) changed";
    }
    if (kinds_loosened) reason += (reason.empty() ? "" : ", ") + kind_reason;
    c->exit_reason = reason;
    return;
  }
  size_t judged = 0, total = 0;
  const std::string summary = JudgedSummary(*c, &judged, &total);
  auto is_slower = [](const TimeRow& r) { return r.verdict == Verdict::kSlower; };
  const auto slower = std::count_if(c->rows.begin(), c->rows.end(), is_slower);
  const auto worse = std::count_if(c->judged.begin(), c->judged.end(), is_slower);
  std::string flagged;
  if (slower > 0) flagged = std::to_string(slower) + " benchmark(s) slower";
  if (worse > 0) {
    flagged += (flagged.empty() ? "" : ", ") + std::to_string(worse) + " judged counter(s) worse";
  }
  if (!flagged.empty() && c->settings.fail_on_slower) {
    c->exit_code = ExitCode::kSlower;
    c->exit_reason = flagged + " (--fail-on-slower); " + summary;
    return;
  }
  c->exit_code = ExitCode::kOk;
  if (!flagged.empty()) {
    c->exit_reason = flagged + ", flagged only; no counter changed and nothing errored; " + summary;
  } else if (c->rows.empty()) {
    c->exit_reason = "no verdict: no benchmark ran on both sides";
  } else if (judged == 0) {
    c->exit_reason = "no verdict: " + summary;
  } else if (judged < total) {
    c->exit_reason =
        "nothing slower or worse among the " + std::to_string(judged) + " judged; " + summary;
  } else {
    c->exit_reason = "all clear: " + summary;
  }
}

// "cut short by its time budget in HEAD (5 of 5 runs)", from the `capped`
// counter the end-to-end harness sets; empty when neither side was.
std::string CappedNote(const BenchmarkResult& b, const BenchmarkResult& h) {
  auto count = [](const BenchmarkResult& r) {
    size_t n = 0;
    if (auto it = r.counters.find("capped"); it != r.counters.end()) {
      for (double v : it->second) n += v > 0 ? 1 : 0;
    }
    return n;
  };
  const size_t in_base = count(b), in_head = count(h);
  if (in_base == 0 && in_head == 0) return "";
  auto side = [](const char* name, size_t n, size_t of) {
    return std::string(name) + " (" + std::to_string(n) + " of " + std::to_string(of) + " runs)";
  };
  std::string where;
  if (in_base > 0) where = side("BASE", in_base, b.real_ns.size());
  if (in_head > 0)
    where += (where.empty() ? "" : " and ") + side("HEAD", in_head, h.real_ns.size());
  return "cut short by its time budget in " + where;
}

// "ran beside other load in HEAD": the suite's main measures, per case, how
// much of a CPU other processes used while it ran (other_cpu_pct); above
// 25 % a time verdict is doubtful whatever the statistics say.
std::string NoisyNote(const BenchmarkResult& b, const BenchmarkResult& h) {
  constexpr double kNoisyPct = 25;
  auto noisy = [](const BenchmarkResult& r) {
    auto it = r.counters.find("other_cpu_pct");
    return it != r.counters.end() && !it->second.empty() && Median(it->second) > kNoisyPct;
  };
  const bool in_base = noisy(b), in_head = noisy(h);
  if (!in_base && !in_head) return "";
  return std::string("ran beside other load (other processes used over 25% of a CPU) in ") +
         (in_base && in_head ? "BASE and HEAD"
          : in_base          ? "BASE"
                             : "HEAD") +
         ": its time verdict is doubtful";
}

}  // namespace

std::string TimeRow::note() const {
  std::string out;
  for (const std::string& n : notes) out += (out.empty() ? "" : "; ") + n;
  return out;
}

int RepetitionsForVerdict(const Settings& settings) {
  int n = std::max(settings.min_repetitions, 2);
  while (n < 1000 && SmallestPValue(n, n) >= settings.alpha) ++n;
  return n;
}

Result<std::pair<Run, Run>> SplitRun(const Run& run, const std::string& base_pattern,
                                     const std::string& head_pattern) {
  std::regex base_re, head_re;
  try {
    base_re = std::regex(base_pattern);
    head_re = std::regex(head_pattern);
  } catch (const std::regex_error& e) {
    return BadRequest(std::string("--filters: not a regular expression (") + e.what() + ")");
  }
  std::pair<Run, Run> sides;
  for (auto* side : {&sides.first, &sides.second}) {
    side->counter_kinds = run.counter_kinds;
    side->context = run.context;
  }
  for (const BenchmarkResult& b : run.benchmarks) {
    for (auto [re, side] : {std::pair{&base_re, &sides.first}, {&head_re, &sides.second}}) {
      std::smatch m;
      if (!std::regex_search(b.name, m, *re) || m.length(0) == 0) continue;
      BenchmarkResult renamed = b;
      renamed.name = m.prefix().str() + "*" + m.suffix().str();
      side->benchmarks.push_back(std::move(renamed));
    }
  }
  return sides;
}

std::string_view RowVerdictName(const TimeRow& row) {
  if (!row.counter.empty() && row.verdict == Verdict::kSlower) return "worse";
  if (!row.counter.empty() && row.verdict == Verdict::kFaster) return "better";
  return VerdictName(row.verdict);
}

std::string RowMeasure(const TimeRow& row) { return row.counter.empty() ? "time" : row.counter; }

namespace {

// The smallest shift (%) that makes `samples` and the same samples scaled by
// (1 + shift) significantly different under the Mann-Whitney test: what this
// side's own spread lets the test see. Bisection over 0.1 % .. 1000 %.
double SignificantShiftPct(const std::vector<double>& samples, double alpha) {
  auto significant = [&](double pct) {
    std::vector<double> shifted = samples;
    for (double& v : shifted) v *= 1 + pct / 100;
    auto test = MannWhitneyU(samples, shifted);
    return test && test->p_value < alpha;
  };
  double lo = 0, hi = 1000;
  if (!significant(hi)) return INFINITY;  // no shift is visible (all zeros)
  while (hi - lo > 0.05) {
    const double mid = (lo + hi) / 2;
    (significant(mid) ? hi : lo) = mid;
  }
  return hi;
}

}  // namespace

std::optional<double> DetectablePct(const std::vector<double>& base,
                                    const std::vector<double>& head, const Settings& settings) {
  const int nb = static_cast<int>(base.size()), nh = static_cast<int>(head.size());
  if (nb < settings.min_repetitions || nh < settings.min_repetitions ||
      SmallestPValue(nb, nh) >= settings.alpha) {
    return std::nullopt;
  }
  double detectable = settings.threshold_pct;
  double worst_cv = 0;
  for (const auto* side : {&base, &head}) {
    detectable = std::max(detectable, SignificantShiftPct(*side, settings.alpha));
    worst_cv = std::max(worst_cv, Summarize(*side).cv_pct.value_or(0));
  }
  if (worst_cv > settings.MaxCvPct()) detectable = std::max(detectable, kNoiseMultiple * worst_cv);
  if (!std::isfinite(detectable)) return std::nullopt;
  return detectable;
}

std::string_view VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kSame:
      return "same";
    case Verdict::kFaster:
      return "faster";
    case Verdict::kSlower:
      return "slower";
    case Verdict::kUnstable:
      return "unstable";
    case Verdict::kTooFewRepetitions:
      return "too few repetitions";
  }
  return "same";
}

SideStats Summarize(const std::vector<double>& samples_ns) {
  SideStats s;
  s.samples = samples_ns.size();
  if (samples_ns.empty()) return s;
  s.median_ns = Median(samples_ns);
  if (samples_ns.size() >= 2) {
    const double n = static_cast<double>(samples_ns.size());
    const double mean = std::accumulate(samples_ns.begin(), samples_ns.end(), 0.0) / n;
    double sq = 0;
    for (double v : samples_ns) sq += (v - mean) * (v - mean);
    if (mean != 0) s.cv_pct = std::sqrt(sq / (n - 1)) / std::fabs(mean) * 100;
  }
  return s;
}

TimeRow JudgeTimes(std::string_view name, const std::vector<double>& base_ns,
                   const std::vector<double>& head_ns, const Settings& settings) {
  TimeRow row;
  row.benchmark = std::string(name);
  row.base = Summarize(base_ns);
  row.head = Summarize(head_ns);
  if (row.base.samples > 0 && row.head.samples > 0) {
    if (row.base.median_ns != 0) {
      row.diff_pct = (row.head.median_ns - row.base.median_ns) / row.base.median_ns * 100;
    } else if (row.head.median_ns == 0) {
      row.diff_pct = 0;
    }
  }
  const int nb = static_cast<int>(row.base.samples);
  const int nh = static_cast<int>(row.head.samples);
  if (nb < settings.min_repetitions || nh < settings.min_repetitions) {
    row.verdict = Verdict::kTooFewRepetitions;
    row.notes.push_back(std::to_string(nb) + " vs " + std::to_string(nh) + " repetitions, need " +
                        std::to_string(settings.min_repetitions) +
                        " per side (run --benchmark_repetitions=" +
                        std::to_string(RepetitionsForVerdict(settings)) + " or more)");
    return row;
  }
  if (SmallestPValue(nb, nh) >= settings.alpha) {
    row.verdict = Verdict::kTooFewRepetitions;
    row.notes.push_back(std::to_string(nb) + " vs " + std::to_string(nh) +
                        " repetitions cannot reach p < " + FormatNumber(settings.alpha) +
                        " (run --benchmark_repetitions=" +
                        std::to_string(RepetitionsForVerdict(settings)) + " or more)");
    return row;
  }
  row.detectable_pct = DetectablePct(base_ns, head_ns, settings);
  if (auto test = MannWhitneyU(base_ns, head_ns)) row.p_value = test->p_value;
  const double max_cv = settings.MaxCvPct();
  const bool base_noisy = row.base.cv_pct && *row.base.cv_pct > max_cv;
  const bool head_noisy = row.head.cv_pct && *row.head.cv_pct > max_cv;
  const bool significant = row.p_value && *row.p_value < settings.alpha;
  // A zero BASE time with a non-zero HEAD time is an unbounded change.
  const double change = row.diff_pct.value_or(row.head.median_ns > 0 ? INFINITY : 0);
  const bool beyond_threshold = std::fabs(change) >= settings.threshold_pct;
  // Noise hides changes of its own size, not a change many times larger: a
  // tenfold slowdown on a busy machine is still a slowdown.
  const double worst_cv = std::max(row.base.cv_pct.value_or(0), row.head.cv_pct.value_or(0));
  const bool dwarfs_noise = std::fabs(change) >= kNoiseMultiple * worst_cv;
  if ((base_noisy || head_noisy) && !(significant && beyond_threshold && dwarfs_noise)) {
    row.verdict = Verdict::kUnstable;
    row.notes.push_back(std::string("coefficient of variation above ") + FormatNumber(max_cv) +
                        "% in " +
                        (base_noisy && head_noisy ? "BASE and HEAD"
                         : base_noisy             ? "BASE"
                                                  : "HEAD") +
                        " (rerun on a quieter machine)");
    return row;
  }
  if (significant && beyond_threshold) {
    row.verdict = change > 0 ? Verdict::kSlower : Verdict::kFaster;
  } else {
    row.verdict = Verdict::kSame;
  }
  return row;
}

Comparison Compare(const Run& base, const Run& head, const Settings& settings) {
  Comparison c;
  c.settings = settings;
  c.base_run = base;
  c.head_run = head;
  FindKindChanges(base, head, &c);
  for (const BenchmarkResult& b : base.benchmarks) {
    NoteProblem(b, Side::kBase, &c);
    if (head.Find(b.name) == nullptr) c.removed.push_back(b.name);
  }
  for (const BenchmarkResult& h : head.benchmarks) {
    NoteProblem(h, Side::kHead, &c);
    const BenchmarkResult* b = base.Find(h.name);
    if (b == nullptr) {
      c.added.push_back(h.name);
      continue;
    }
    if (b->state != RunState::kOk || h.state != RunState::kOk) continue;
    const bool per_item = !settings.cpu_time && !b->per_item_ns.empty() && !h.per_item_ns.empty();
    const auto& base_samples = per_item            ? b->per_item_ns
                               : settings.cpu_time ? b->cpu_ns
                                                   : b->real_ns;
    const auto& head_samples = per_item ? h.per_item_ns : settings.cpu_time ? h.cpu_ns : h.real_ns;
    TimeRow row = JudgeTimes(h.name, base_samples, head_samples, settings);
    row.time_unit = h.time_unit;
    row.per_item = per_item;
    if (b->from_aggregates || h.from_aggregates) {
      row.notes.push_back("aggregates only: samples are per-run medians");
    }
    if (std::string capped = CappedNote(*b, h); !capped.empty()) row.notes.push_back(capped);
    if (std::string noisy = NoisyNote(*b, h); !noisy.empty()) row.notes.push_back(noisy);
    c.rows.push_back(std::move(row));
    CompareCounters(*b, h, base, head, &c);
  }
  ChooseExitCode(&c);
  return c;
}

}  // namespace skiff::compare
