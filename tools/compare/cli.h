// The skiff-compare command line: its options table (CLI11, through
// cmd/command_line.h) and the whole program as a function, so tests can
// check exit codes and output without a process.
// Thread-compatible: RunCompareCli touches only its arguments and streams.
#ifndef SKIFF_COMPARE_CLI_H_
#define SKIFF_COMPARE_CLI_H_

#include <ostream>
#include <string>
#include <vector>

#include "base/status.h"

#include "compare/comparison.h"

namespace skiff::compare {

enum class Format { kTable, kMarkdown, kJson };

struct CliOptions {
  std::string base_path;
  std::string head_path;
  Format format = Format::kTable;
  Settings settings;
  // --filters BASE_RE HEAD_RE: both sides from the one file in base_path.
  std::string base_filter;
  std::string head_filter;
  // --figures RUN.json: only that run's own figures, as the JSON report's
  // "runs" section, with nothing judged (head_path is the run).
  bool figures = false;
  bool help = false;
  bool version = false;
};

// Parses arguments (without the program name). Bad arguments give a
// bad_request Status whose message says what was wrong.
Result<CliOptions> ParseCliOptions(const std::vector<std::string>& args);

std::string HelpText();

// Runs skiff-compare; returns its exit code (see ExitCode). The report goes to
// `out`, diagnostics to `err`.
int RunCompareCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace skiff::compare

#endif  // SKIFF_COMPARE_CLI_H_
