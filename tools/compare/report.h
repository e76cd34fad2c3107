// Renders a Comparison for people (terminal table, markdown for a CI job
// summary) and for programs (JSON, schema in docs/benchmarks.md). Pure
// functions; thread-safe.
#ifndef SKIFF_COMPARE_REPORT_H_
#define SKIFF_COMPARE_REPORT_H_

#include <string>
#include <vector>

#include "compare/comparison.h"
#include "compare/run.h"

namespace skiff::compare {

struct ReportLabels {
  std::string base = "BASE";  // usually the file names
  std::string head = "HEAD";
};

// Rows that share a note, in order of first appearance: one line per cause.
struct NoteGroup {
  std::string note;
  std::vector<std::string> benchmarks;
};
std::vector<NoteGroup> GroupNotes(const Comparison& c);

// What the comparison could see, per measure ("time", then each judged
// counter): over the rows that could get a verdict, the median and the
// largest smallest-detectable change, and the case that needs the largest.
struct Detectable {
  std::string measure;
  size_t rows = 0;     // rows with a detectable figure
  size_t without = 0;  // rows that could get no verdict at all
  double median_pct = 0;
  double worst_pct = 0;
  std::string worst_benchmark;
};
std::vector<Detectable> SummarizeDetectable(const Comparison& c);

std::string RenderTable(const Comparison& c, const ReportLabels& labels);
std::string RenderMarkdown(const Comparison& c, const ReportLabels& labels);
// Besides the verdicts, the JSON carries each side's own figures ("runs":
// medians of time, rates and counters per benchmark, the context, the
// counter kinds): the one reading of Google Benchmark JSON that other views
// (the results page) show.
std::string RenderJson(const Comparison& c, const ReportLabels& labels);
// One run's figures alone, for a view of a run without a base: the "runs"
// section of RenderJson with only "head" (the run), byte for byte what a
// comparison with that run as HEAD carries, under its own format name
// ("skiff-compare-figures/1") so that no script takes it for a verdict.
std::string RenderFiguresJson(const Run& run, const std::string& label);

}  // namespace skiff::compare

#endif  // SKIFF_COMPARE_REPORT_H_
