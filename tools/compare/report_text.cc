// The two human formats share one layout; only the table syntax, headings and
// lists differ.
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <utility>

#include "compare/format.h"
#include "compare/grid.h"
#include "compare/report.h"

namespace skiff::compare {
namespace {

class Writer {
 public:
  explicit Writer(bool markdown) : markdown_(markdown) {}

  void Heading(const std::string& text) {
    out_ += markdown_ ? "\n#### " + text + "\n\n" : "\n" + text + ":\n";
  }
  void Table(const Grid& grid) { out_ += markdown_ ? grid.Markdown() : grid.Plain(); }
  void Item(const std::string& text) { out_ += (markdown_ ? "- " : "  ") + text + "\n"; }
  void Line(const std::string& text) { out_ += text + "\n"; }
  std::string Code(const std::string& text) const { return markdown_ ? "`" + text + "`" : text; }
  std::string Take() { return std::move(out_); }

 private:
  bool markdown_;
  std::string out_;
};

std::string NaturalUnit(double ns) {
  return ns >= 1e9 ? "s" : ns >= 1e6 ? "ms" : ns >= 1e3 ? "us" : "ns";
}

std::string SideName(Side s) { return s == Side::kBase ? "BASE" : "HEAD"; }

std::string Cv(const SideStats& s) {
  return s.cv_pct ? FormatPercent(*s.cv_pct).substr(1) : "-";  // no sign on a spread
}

std::string OneDecimal(double pct) { return FormatInfoNumber(std::round(pct * 10) / 10); }

// The smallest change the row could have been given a verdict for.
std::string Sees(const TimeRow& r) {
  return r.detectable_pct ? ">=" + OneDecimal(*r.detectable_pct) + "%" : "-";
}

std::string VerdictCell(const TimeRow& r, bool markdown) {
  std::string verdict(RowVerdictName(r));
  if (markdown && (r.verdict == Verdict::kSlower || r.verdict == Verdict::kFaster)) {
    verdict = "**" + verdict + "**";
  }
  return verdict;
}

std::string Render(const Comparison& c, const ReportLabels& labels, bool markdown) {
  Writer w(markdown);
  const Settings& s = c.settings;
  if (markdown) w.Line("### Benchmark comparison");
  w.Line((markdown ? "\n" : "") + std::string("BASE ") + w.Code(labels.base) + " vs HEAD " +
         w.Code(labels.head) + ": median " + (s.cpu_time ? "CPU" : "real") +
         " time (per item where both runs report a rate); verdict needs Mann-Whitney p < " +
         FormatNumber(s.alpha) + " and a change of " + FormatNumber(s.threshold_pct) +
         "% or more; unstable above " + FormatNumber(s.MaxCvPct()) +
         "% CV. Judged counters follow the same rules.");
  w.Heading("Times");
  // "Sees": the smallest change this row could have been called slower or
  // faster for, from its own spread (DetectablePct).
  if (c.rows.empty()) {
    w.Line("No benchmark ran on both sides.");
  } else {
    Grid grid(
        {"Benchmark", "Base", "Head", "Diff", "p", "Reps", "CV base/head", "Sees", "Verdict"});
    for (const TimeRow& r : c.rows) {
      // A time per item has no unit of its own in the run: pick one that
      // reads well.
      const std::string unit =
          r.per_item ? NaturalUnit(std::min(r.base.median_ns, r.head.median_ns)) : r.time_unit;
      const std::string per = r.per_item ? "/item" : "";
      grid.AddRow({r.benchmark, r.base.samples ? FormatTime(r.base.median_ns, unit) + per : "-",
                   r.head.samples ? FormatTime(r.head.median_ns, unit) + per : "-",
                   FormatPercent(r.diff_pct), FormatPValue(r.p_value),
                   std::to_string(r.base.samples) + "/" + std::to_string(r.head.samples),
                   Cv(r.base) + "/" + Cv(r.head), Sees(r), VerdictCell(r, markdown)});
    }
    w.Table(grid);
    const std::vector<NoteGroup> groups = GroupNotes(c);
    if (!groups.empty()) w.Line(markdown ? "\nNotes:\n" : "\nNotes:");
    for (const NoteGroup& g : groups) {
      std::string names;
      for (const std::string& b : g.benchmarks) names += (names.empty() ? "" : ", ") + w.Code(b);
      w.Item(names + ": " + g.note);
    }
  }
  if (!c.judged.empty()) {
    w.Heading("Judged counters (server CPU per operation, memory: judged like times)");
    Grid grid(
        {"Benchmark", "Counter", "Base", "Head", "Diff", "p", "CV base/head", "Sees", "Verdict"});
    for (const TimeRow& r : c.judged) {
      grid.AddRow({r.benchmark, r.counter + (r.higher_is_better ? " (higher is better)" : ""),
                   r.base.samples ? FormatInfoNumber(r.base.median_ns) : "-",
                   r.head.samples ? FormatInfoNumber(r.head.median_ns) : "-",
                   FormatPercent(r.diff_pct), FormatPValue(r.p_value),
                   Cv(r.base) + "/" + Cv(r.head), Sees(r), VerdictCell(r, markdown)});
    }
    w.Table(grid);
  }
  if (const std::vector<Detectable> seen = SummarizeDetectable(c); !seen.empty()) {
    w.Heading("What this comparison can see");
    for (const Detectable& d : seen) {
      std::string line = d.measure + ": ";
      if (d.rows == 0) {
        line += "no row could get a verdict";
      } else {
        line += "sees a change of " + OneDecimal(d.median_pct) + "% or more (median over " +
                std::to_string(d.rows) + " row(s)); every row sees " + OneDecimal(d.worst_pct) +
                "% (the least sensitive: " + w.Code(d.worst_benchmark) + ")";
      }
      if (d.without > 0) line += "; " + std::to_string(d.without) + " row(s) could get no verdict";
      w.Item(line);
    }
  }
  if (!c.kind_changes.empty()) {
    w.Heading(
        "Counter kinds changed (judged as the stricter kind; judged less than in BASE fails)");
    Grid grid({"Counter", "Base", "Head"});
    for (const KindChange& k : c.kind_changes) {
      grid.AddRow(
          {k.counter, std::string(CounterKindName(k.base)), std::string(CounterKindName(k.head))});
    }
    w.Table(grid);
  }
  if (c.deterministic_checked > 0 && c.counter_changes.empty()) {
    w.Line(std::string("\nDeterministic counters: ") + std::to_string(c.deterministic_checked) +
           " compared, all equal.");
  }
  if (!c.counter_changes.empty()) {
    w.Heading(s.within_run
                  ? "Deterministic counters that differ (shown, not judged: two cases of one run)"
                  : "Deterministic counters changed");
    Grid grid({"Benchmark", "Counter", "Base", "Head"});
    for (const auto& ch : c.counter_changes)
      grid.AddRow({ch.benchmark, ch.counter, ch.base, ch.head});
    w.Table(grid);
  }
  if (!c.new_counters.empty()) {
    w.Heading("New deterministic counters (not in BASE, not judged)");
    Grid grid({"Benchmark", "Counter", "Head"});
    for (const auto& ch : c.new_counters) grid.AddRow({ch.benchmark, ch.counter, ch.head});
    w.Table(grid);
  }
  if (!c.info_counters.empty()) {
    w.Heading("Info counters (shown, never judged)");
    Grid grid({"Benchmark", "Counter", "Base", "Head", "Diff"});
    for (const auto& ic : c.info_counters) {
      std::optional<double> diff;
      if (ic.base && ic.head && *ic.base != 0) diff = (*ic.head - *ic.base) / *ic.base * 100;
      if (ic.base && ic.head && *ic.base == 0 && *ic.head == 0) diff = 0;
      grid.AddRow({ic.benchmark, ic.counter, ic.base ? FormatInfoNumber(*ic.base) : "absent",
                   ic.head ? FormatInfoNumber(*ic.head) : "absent", FormatPercent(diff)});
    }
    w.Table(grid);
  }
  auto list = [&](const std::string& title, const std::vector<std::string>& names) {
    if (names.empty()) return;
    w.Heading(title);
    for (const auto& n : names) w.Item(w.Code(n));
  };
  list(s.within_run ? "Only in HEAD" : "Added in HEAD", c.added);
  list(s.within_run ? "Only in BASE" : "Removed from HEAD", c.removed);
  auto problems = [&](const std::string& title, const std::vector<Problem>& ps) {
    if (ps.empty()) return;
    w.Heading(title);
    for (const auto& p : ps)
      w.Item(w.Code(p.benchmark) + " in " + SideName(p.side) + ": " + p.message);
  };
  problems("Errored", c.errored);
  problems("Skipped", c.skipped);
  w.Line((markdown ? "\n**Result:** exit " : "\nResult: exit ") +
         std::to_string(static_cast<int>(c.exit_code)) + ", " + c.exit_reason + ".");
  return w.Take();
}

}  // namespace

std::vector<NoteGroup> GroupNotes(const Comparison& c) {
  std::vector<NoteGroup> groups;
  auto add = [&](const TimeRow& r) {
    for (const std::string& note : r.notes) {
      auto it = std::find_if(groups.begin(), groups.end(),
                             [&](const NoteGroup& g) { return g.note == note; });
      if (it == groups.end()) it = groups.insert(groups.end(), NoteGroup{note, {}});
      it->benchmarks.push_back(r.benchmark + (r.counter.empty() ? "" : " " + r.counter));
    }
  };
  for (const TimeRow& r : c.rows) add(r);
  for (const TimeRow& r : c.judged) add(r);
  return groups;
}

std::vector<Detectable> SummarizeDetectable(const Comparison& c) {
  std::vector<Detectable> out;
  std::map<std::string, std::vector<std::pair<double, std::string>>> by_measure;
  auto add = [&](const TimeRow& r) {
    const std::string measure = RowMeasure(r);
    auto it = std::find_if(out.begin(), out.end(),
                           [&](const Detectable& d) { return d.measure == measure; });
    if (it == out.end()) {
      Detectable fresh;
      fresh.measure = measure;
      it = out.insert(out.end(), std::move(fresh));
    }
    if (!r.detectable_pct) {
      ++it->without;
      return;
    }
    by_measure[measure].emplace_back(*r.detectable_pct, r.benchmark);
  };
  for (const TimeRow& r : c.rows) add(r);
  for (const TimeRow& r : c.judged) add(r);
  for (Detectable& d : out) {
    auto& values = by_measure[d.measure];
    d.rows = values.size();
    if (values.empty()) continue;
    std::sort(values.begin(), values.end());
    const size_t n = values.size();
    d.median_pct =
        n % 2 ? values[n / 2].first : (values[n / 2 - 1].first + values[n / 2].first) / 2;
    d.worst_pct = values.back().first;
    d.worst_benchmark = values.back().second;
  }
  return out;
}

std::string RenderTable(const Comparison& c, const ReportLabels& labels) {
  return Render(c, labels, /*markdown=*/false);
}

std::string RenderMarkdown(const Comparison& c, const ReportLabels& labels) {
  return Render(c, labels, /*markdown=*/true);
}

}  // namespace skiff::compare
