// Renders a Comparison for people (terminal table, markdown for a CI job
// summary) and for programs (JSON, schema in docs/benchmarks.md). Pure
// functions; thread-safe.
#ifndef SKIFF_COMPARE_REPORT_H_
#define SKIFF_COMPARE_REPORT_H_

#include <string>
#include <vector>

#include "compare/comparison.h"

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
std::string RenderJson(const Comparison& c, const ReportLabels& labels);

}  // namespace skiff::compare

#endif  // SKIFF_COMPARE_REPORT_H_
