// Renders a Comparison for people (terminal table, markdown for a CI job
// summary) and for programs (JSON, schema in docs/benchmarks.md). Pure
// functions; thread-safe.
#ifndef SKIFF_COMPARE_REPORT_H_
#define SKIFF_COMPARE_REPORT_H_

#include <string>

#include "compare/comparison.h"

namespace skiff::compare {

struct ReportLabels {
  std::string base = "BASE";  // usually the file names
  std::string head = "HEAD";
};

std::string RenderTable(const Comparison& c, const ReportLabels& labels);
std::string RenderMarkdown(const Comparison& c, const ReportLabels& labels);
std::string RenderJson(const Comparison& c, const ReportLabels& labels);

}  // namespace skiff::compare

#endif  // SKIFF_COMPARE_REPORT_H_
