// The two human formats share one layout; only the table syntax, headings and
// lists differ.
#include <algorithm>
#include <string>

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

std::string Render(const Comparison& c, const ReportLabels& labels, bool markdown) {
  Writer w(markdown);
  const Settings& s = c.settings;
  if (markdown) w.Line("### Benchmark comparison");
  w.Line((markdown ? "\n" : "") + std::string("BASE ") + w.Code(labels.base) + " vs HEAD " +
         w.Code(labels.head) + ": median " + (s.cpu_time ? "CPU" : "real") +
         " time (per item where both runs report a rate); verdict needs Mann-Whitney p < " +
         FormatNumber(s.alpha) + " and a change of " + FormatNumber(s.threshold_pct) +
         "% or more; unstable above " + FormatNumber(s.MaxCvPct()) + "% CV.");
  w.Heading("Times");
  if (c.rows.empty()) {
    w.Line("No benchmark ran on both sides.");
  } else {
    Grid grid({"Benchmark", "Base", "Head", "Diff", "p", "Reps", "CV base/head", "Verdict"});
    for (const TimeRow& r : c.rows) {
      std::string verdict(VerdictName(r.verdict));
      if (markdown && (r.verdict == Verdict::kSlower || r.verdict == Verdict::kFaster)) {
        verdict = "**" + verdict + "**";
      }
      // A time per item has no unit of its own in the run: pick one that
      // reads well.
      const std::string unit =
          r.per_item ? NaturalUnit(std::min(r.base.median_ns, r.head.median_ns)) : r.time_unit;
      const std::string per = r.per_item ? "/item" : "";
      grid.AddRow({r.benchmark, r.base.samples ? FormatTime(r.base.median_ns, unit) + per : "-",
                   r.head.samples ? FormatTime(r.head.median_ns, unit) + per : "-",
                   FormatPercent(r.diff_pct), FormatPValue(r.p_value),
                   std::to_string(r.base.samples) + "/" + std::to_string(r.head.samples),
                   Cv(r.base) + "/" + Cv(r.head), verdict});
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
  for (const TimeRow& r : c.rows) {
    for (const std::string& note : r.notes) {
      auto it = std::find_if(groups.begin(), groups.end(),
                             [&](const NoteGroup& g) { return g.note == note; });
      if (it == groups.end()) it = groups.insert(groups.end(), NoteGroup{note, {}});
      it->benchmarks.push_back(r.benchmark);
    }
  }
  return groups;
}

std::string RenderTable(const Comparison& c, const ReportLabels& labels) {
  return Render(c, labels, /*markdown=*/false);
}

std::string RenderMarkdown(const Comparison& c, const ReportLabels& labels) {
  return Render(c, labels, /*markdown=*/true);
}

}  // namespace skiff::compare
