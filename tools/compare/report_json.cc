#include <algorithm>
#include <string>

#include <nlohmann/json.hpp>

#include "compare/report.h"

namespace skiff::compare {
namespace {

using nlohmann::json;

json Optional(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

json Stats(const SideStats& s) {
  return {{"repetitions", s.samples},
          {"median_ns", s.samples ? json(s.median_ns) : json(nullptr)},
          {"cv_pct", Optional(s.cv_pct)}};
}

json Counters(const std::vector<CounterChange>& changes) {
  json out = json::array();
  for (const auto& c : changes) {
    out.push_back(
        {{"benchmark", c.benchmark}, {"counter", c.counter}, {"base", c.base}, {"head", c.head}});
  }
  return out;
}

json Problems(const std::vector<Problem>& problems) {
  json out = json::array();
  for (const auto& p : problems) {
    out.push_back({{"benchmark", p.benchmark},
                   {"side", p.side == Side::kBase ? "base" : "head"},
                   {"message", p.message}});
  }
  return out;
}

// A judged counter's values are not times.
json CounterStats(const SideStats& s) {
  return {{"repetitions", s.samples},
          {"median", s.samples ? json(s.median_ns) : json(nullptr)},
          {"cv_pct", Optional(s.cv_pct)}};
}

// Verdict names in JSON use underscores ("too_few_repetitions") so scripts can
// use them as keys.
std::string JsonVerdict(Verdict v) {
  std::string name(VerdictName(v));
  for (char& ch : name) ch = ch == ' ' ? '_' : ch;
  return name;
}

json DetectableJson(const Comparison& c) {
  json out = json::array();
  for (const Detectable& d : SummarizeDetectable(c)) {
    out.push_back({{"measure", d.measure},
                   {"rows", d.rows},
                   {"without_verdict", d.without},
                   {"median_pct", d.rows ? json(d.median_pct) : json(nullptr)},
                   {"worst_pct", d.rows ? json(d.worst_pct) : json(nullptr)},
                   {"worst_benchmark", d.worst_benchmark}});
  }
  return out;
}

json MedianOrNull(const std::vector<double>& samples) {
  return samples.empty() ? json(nullptr) : json(Summarize(samples).median_ns);
}

std::string_view StateName(RunState state) {
  switch (state) {
    case RunState::kOk:
      return "ok";
    case RunState::kErrored:
      return "errored";
    case RunState::kSkipped:
      return "skipped";
  }
  return "ok";
}

// One run's own figures, medians over its repetitions: what a reader such as
// the results page shows beside the verdicts, so that it needs no Google
// Benchmark reader of its own and shows the numbers the verdicts rest on.
json RunFigures(const Run& run) {
  json benchmarks = json::array();
  for (const BenchmarkResult& b : run.benchmarks) {
    json counters = json::object();
    json rates = {{"items_per_second", nullptr}, {"bytes_per_second", nullptr}};
    size_t capped = 0;
    for (const auto& [name, values] : b.counters) {
      if (rates.contains(name)) {
        rates[name] = MedianOrNull(values);
        continue;
      }
      counters[name] = MedianOrNull(values);
      // The end-to-end harness sets `capped` in each repetition its budget cut short.
      if (name == "capped")
        capped = std::count_if(values.begin(), values.end(), [](double v) { return v > 0; });
    }
    benchmarks.push_back({{"name", b.name},
                          {"label", b.label},
                          {"state", StateName(b.state)},
                          {"error_message", b.error_message},
                          {"repetitions", b.real_ns.size()},
                          {"from_aggregates", b.from_aggregates},
                          {"time_unit", b.time_unit},
                          {"real_time_ns", MedianOrNull(b.real_ns)},
                          {"cpu_time_ns", MedianOrNull(b.cpu_ns)},
                          {"items_per_second", rates["items_per_second"]},
                          {"bytes_per_second", rates["bytes_per_second"]},
                          {"capped_repetitions", capped},
                          {"counters", std::move(counters)}});
  }
  json kinds = json::object();
  for (const auto& [name, kind] : run.counter_kinds) kinds[name] = CounterKindName(kind);
  json context = json::parse(run.context, nullptr, /*allow_exceptions=*/false);
  if (!context.is_object()) context = json::object();
  return {{"context", std::move(context)},
          {"counter_kinds", std::move(kinds)},
          {"benchmarks", std::move(benchmarks)}};
}

std::string JsonRowVerdict(const TimeRow& r) {
  std::string name(RowVerdictName(r));
  for (char& ch : name) ch = ch == ' ' ? '_' : ch;
  return name;
}

}  // namespace

std::string RenderJson(const Comparison& c, const ReportLabels& labels) {
  const Settings& s = c.settings;
  json out;
  out["format"] = "skiff-compare/1";
  out["base"] = labels.base;
  out["head"] = labels.head;
  out["settings"] = {{"alpha", s.alpha},
                     {"threshold_pct", s.threshold_pct},
                     {"max_cv_pct", s.MaxCvPct()},
                     {"min_repetitions", s.min_repetitions},
                     {"time", s.cpu_time ? "cpu" : "real"},
                     {"fail_on_slower", s.fail_on_slower}};
  json rows = json::array();
  for (const TimeRow& r : c.rows) {
    rows.push_back({{"benchmark", r.benchmark},
                    {"time_unit", r.time_unit},
                    {"base", Stats(r.base)},
                    {"head", Stats(r.head)},
                    {"diff_pct", Optional(r.diff_pct)},
                    {"p_value", Optional(r.p_value)},
                    {"detectable_pct", Optional(r.detectable_pct)},
                    {"verdict", JsonVerdict(r.verdict)},
                    {"judged", r.per_item   ? "time_per_item"
                               : s.cpu_time ? "cpu_time"
                                            : "real_time"},
                    {"note", r.note()}});
  }
  out["benchmarks"] = std::move(rows);
  json judged = json::array();
  for (const TimeRow& r : c.judged) {
    judged.push_back({{"benchmark", r.benchmark},
                      {"counter", r.counter},
                      {"better", r.higher_is_better ? "higher" : "lower"},
                      {"base", CounterStats(r.base)},
                      {"head", CounterStats(r.head)},
                      {"diff_pct", Optional(r.diff_pct)},
                      {"p_value", Optional(r.p_value)},
                      {"detectable_pct", Optional(r.detectable_pct)},
                      {"verdict", JsonRowVerdict(r)},
                      {"note", r.note()}});
  }
  out["judged_counters"] = std::move(judged);
  json kinds = json::array();
  for (const KindChange& k : c.kind_changes) {
    kinds.push_back({{"counter", k.counter},
                     {"base", std::string(CounterKindName(k.base))},
                     {"head", std::string(CounterKindName(k.head))}});
  }
  out["kind_changes"] = std::move(kinds);
  json notes = json::array();
  for (const NoteGroup& g : GroupNotes(c)) {
    notes.push_back({{"note", g.note}, {"benchmarks", g.benchmarks}});
  }
  out["notes"] = std::move(notes);
  out["counter_changes"] = Counters(c.counter_changes);
  out["new_counters"] = Counters(c.new_counters);
  json info = json::array();
  for (const auto& ic : c.info_counters) {
    info.push_back({{"benchmark", ic.benchmark},
                    {"counter", ic.counter},
                    {"base", Optional(ic.base)},
                    {"head", Optional(ic.head)}});
  }
  out["info_counters"] = std::move(info);
  out["added"] = c.added;
  out["removed"] = c.removed;
  out["errored"] = Problems(c.errored);
  out["skipped"] = Problems(c.skipped);
  json summary = {
      {"counter_changes", c.counter_changes.size()},
      {"deterministic_checked", c.deterministic_checked},
      {"errored_in_head", std::count_if(c.errored.begin(), c.errored.end(),
                                        [](const Problem& p) { return p.side == Side::kHead; })},
      {"removed", c.removed.size()},
      {"added", c.added.size()}};
  // One count per verdict, zero included, so scripts need no defaults.
  for (Verdict v : {Verdict::kSame, Verdict::kFaster, Verdict::kSlower, Verdict::kUnstable,
                    Verdict::kTooFewRepetitions}) {
    summary[JsonVerdict(v)] = std::count_if(c.rows.begin(), c.rows.end(),
                                            [v](const TimeRow& r) { return r.verdict == v; });
  }
  for (const char* v : {"worse", "better"}) {
    summary[std::string("judged_") + v] = std::count_if(
        c.judged.begin(), c.judged.end(), [v](const TimeRow& r) { return RowVerdictName(r) == v; });
  }
  summary["judged_counters"] = c.judged.size();
  summary["kind_changes"] = c.kind_changes.size();
  out["summary"] = std::move(summary);
  out["detectable"] = DetectableJson(c);
  out["settings"]["within_run"] = s.within_run;
  out["runs"] = {{"base", RunFigures(c.base_run)}, {"head", RunFigures(c.head_run)}};
  out["exit_code"] = static_cast<int>(c.exit_code);
  out["exit_reason"] = c.exit_reason;
  // Benchmark names and messages come from outside: replace invalid UTF-8
  // instead of throwing.
  return out.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

std::string RenderFiguresJson(const Run& run, const std::string& label) {
  json out;
  out["format"] = "skiff-compare-figures/1";
  out["head"] = label;
  out["runs"] = {{"head", RunFigures(run)}};
  return out.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace skiff::compare
