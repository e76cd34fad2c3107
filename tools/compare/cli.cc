#include "compare/cli.h"

#include <climits>
#include <cmath>
#include <cstdlib>

#include "cmd/command_line.h"

#include "compare/report.h"
#include "compare/run.h"

namespace skiff::compare {
namespace {

constexpr char kDescription[] =
    R"(Compares two Google Benchmark JSON outputs (--benchmark_out_format=json).
Benchmarks are matched by run_name; per-repetition rows are the samples.
With --filters, both sides come from one run: the benchmarks whose name
matches BASE_RE against those matching HEAD_RE, paired by name with the
match replaced by "*" (two stores side by side: --filters sqlite postgres).
With --figures, one run's own figures (the JSON report's "runs" section,
medians per benchmark) and no verdict: what a view of a run without a base
shows.
  skiff-compare [OPTIONS] BASE.json HEAD.json
  skiff-compare [OPTIONS] --filters BASE_RE HEAD_RE RUN.json
  skiff-compare --figures RUN.json)";

constexpr char kFooter[] =
    R"(Times are judged per item (1e9 / items_per_second) when both sides report a
rate in every sample, else per iteration (real_time, or cpu_time).
Verdicts: faster / slower need both p < alpha and a change >= threshold;
unstable when CV > max-cv on either side; too few repetitions when a side has
fewer than N samples or the test cannot reach alpha with that many.
Counters take their kind from context.skiff_counter_kinds, read from both
runs (a counter whose kind differs is judged as the stricter kind, and the
change fails the run like a changed counter):
  deterministic   must be equal (relative tolerance 1e-9);
  judged_lower    server CPU per operation, memory: judged like times over
  judged_higher   the repetitions' values, "worse" / "better" in their direction;
  info            shown, never judged.
"Sees" is the smallest change a row could have been given a verdict for,
from its own spread: at least the threshold, the wider side's range, and
three times a noisy side's CV. Run the same build twice (A/A) to learn what
a comparison on this machine can see.

Exit codes (the first that applies wins; the suite's scheme, docs/benchmarks.md):
  64 bad arguments
  3  bad input: unreadable file, malformed JSON, wrong shape
  2  a benchmark errored in HEAD or was removed from HEAD
  1  a deterministic counter changed, or a counter's kind changed
  4  a benchmark is slower or a judged counter worse, and --fail-on-slower was given
  0  all clear (times alone never fail a run)
With --figures nothing is judged: 0, or 3 for bad input (64 for bad arguments).)";

// A finite number within [min, max] (an end left open when `open`).
CLI::Validator Number(double min, double max, bool open) {
  return CLI::Validator(
      [=](const std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (text.empty() || *end != '\0' || !std::isfinite(v))
          return "'" + text + "' is not a number";
        if (open ? (v <= min || v >= max) : (v < min || v > max)) {
          return open ? "must be between " + std::to_string(min) + " and " + std::to_string(max)
                      : "must not be negative";
        }
        return "";
      },
      "", "Number");
}

// Everything skiff-compare's arguments can be before they are checked
// against each other.
struct Raw {
  std::string format = "table";
  std::vector<std::string> filters;
  std::vector<std::string> files;
};

// The table: each option's name, type, default and help.
void AddOptions(CLI::App& app, CliOptions& o, Raw& raw) {
  cmd::UseSkiffConventions(app);
  app.description(kDescription);
  app.footer(kFooter);
  app.set_version_flag("--version", std::string("skiff-compare ") + SKIFF_VERSION,
                       "the version of this build");
  app.add_option("--format", raw.format, "output format")
      ->type_name("table|markdown|json")
      ->check(CLI::IsMember({"table", "markdown", "json"}).description(""))
      ->capture_default_str();
  app.add_option("--threshold", o.settings.threshold_pct,
                 "smallest median change called faster/slower")
      ->type_name("PCT")
      ->check(Number(0, HUGE_VAL, false))
      ->capture_default_str();
  app.add_option("--alpha", o.settings.alpha, "significance level of the Mann-Whitney U test")
      ->type_name("P")
      ->check(Number(0, 1, true))
      ->capture_default_str();
  app.add_option_function<double>(
         "--max-cv", [&o](const double& v) { o.settings.max_cv_pct = v; },
         "coefficient of variation above which a benchmark is unstable")
      ->type_name("PCT")
      ->check(Number(0, HUGE_VAL, false))
      ->default_str("the threshold");
  app.add_option("--min-repetitions", o.settings.min_repetitions,
                 "fewer samples per side give \"too few repetitions\"")
      ->type_name("N")
      ->transform(cmd::WholeNumber())
      ->check(CLI::Range(1, INT_MAX).description(""))
      ->capture_default_str();
  cmd::AddBoolFlag(app, "--cpu-time", o.settings.cpu_time, "judge cpu_time instead of real_time");
  cmd::AddBoolFlag(app, "--fail-on-slower", o.settings.fail_on_slower,
                   "exit 4 when a benchmark is slower or a judged counter worse");
  app.add_option("--filters", raw.filters, "compare two sets of benchmarks of one run")
      ->type_name("BASE_RE HEAD_RE")
      ->expected(2)
      ->allow_extra_args(false);  // the run file that follows is not a third pattern
  cmd::AddBoolFlag(app, "--figures", o.figures,
                   "print RUN.json's own figures as JSON (\"runs\"); judge nothing");
  app.add_option("files", raw.files, "BASE.json HEAD.json, or RUN.json with --filters or --figures")
      ->type_name("FILE");
}

}  // namespace

std::string HelpText() {
  CLI::App app("", "skiff-compare");
  CliOptions o;
  Raw raw;
  AddOptions(app, o, raw);
  return app.help();
}

Result<CliOptions> ParseCliOptions(const std::vector<std::string>& args) {
  CLI::App app("", "skiff-compare");
  CliOptions o;
  Raw raw;
  AddOptions(app, o, raw);
  SKIFF_ASSIGN_OR_RETURN(cmd::Parsed parsed, cmd::ParseArgs(app, args));
  if (parsed.action == cmd::Parsed::Action::kHelp) {
    o.help = true;
    return o;
  }
  if (parsed.action == cmd::Parsed::Action::kVersion) {
    o.version = true;
    return o;
  }
  o.format = raw.format == "json"       ? Format::kJson
             : raw.format == "markdown" ? Format::kMarkdown
                                        : Format::kTable;
  if (o.figures) {
    // The figures are JSON only and of one run: asking for anything else is
    // a mistake worth saying, not a request to drop silently.
    if (!raw.filters.empty()) return BadRequest("--figures reads one run; --filters pairs two");
    if (app.count("--format") > 0 && o.format != Format::kJson) {
      return BadRequest("--figures prints JSON only, not --format " + raw.format);
    }
    if (raw.files.size() != 1) {
      return BadRequest("with --figures, expected one RUN.json, got " +
                        std::to_string(raw.files.size()) + " file argument(s)");
    }
    o.format = Format::kJson;
    o.head_path = raw.files[0];
    return o;
  }
  if (!raw.filters.empty()) {
    // CLI11 stops at one value when no more follow.
    if (raw.filters.size() != 2) return BadRequest("--filters needs BASE_RE and HEAD_RE");
    o.base_filter = raw.filters[0];
    o.head_filter = raw.filters[1];
    if (o.base_filter.empty() || o.head_filter.empty()) {
      return BadRequest("--filters needs two non-empty patterns");
    }
    o.settings.within_run = true;
    if (raw.files.size() != 1) {
      return BadRequest("with --filters, expected one RUN.json, got " +
                        std::to_string(raw.files.size()) + " file argument(s)");
    }
    o.base_path = o.head_path = raw.files[0];
    return o;
  }
  if (raw.files.size() != 2) {
    return BadRequest("expected BASE.json and HEAD.json, got " + std::to_string(raw.files.size()) +
                      " file argument(s)");
  }
  o.base_path = raw.files[0];
  o.head_path = raw.files[1];
  return o;
}

int RunCompareCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  constexpr int kBadInput = static_cast<int>(ExitCode::kBadInput);
  constexpr int kUsage = static_cast<int>(ExitCode::kUsage);
  auto options = ParseCliOptions(args);
  if (!options.ok()) {
    err << "skiff-compare: " << options.status().message() << "\n"
        << "Try skiff-compare --help.\n";
    return kUsage;
  }
  if (options->help) {
    out << HelpText();
    return 0;
  }
  if (options->version) {
    out << "skiff-compare " << SKIFF_VERSION << "\n";
    return 0;
  }
  if (options->figures) {
    auto run = LoadRun(options->head_path);
    if (!run.ok()) {
      err << "skiff-compare: " << run.status().message() << "\n";
      return kBadInput;
    }
    // Nothing is judged, so an errored case is a figure (its state), not an
    // exit code.
    out << RenderFiguresJson(*run, options->head_path);
    return 0;
  }
  auto base = LoadRun(options->base_path);
  if (!base.ok()) {
    err << "skiff-compare: " << base.status().message() << "\n";
    return kBadInput;
  }
  ReportLabels labels{options->base_path, options->head_path};
  Result<Run> head = Run{};
  if (options->settings.within_run) {
    auto sides = SplitRun(*base, options->base_filter, options->head_filter);
    if (!sides.ok()) {
      err << "skiff-compare: " << sides.status().message() << "\n";
      return kUsage;
    }
    *base = std::move(sides->first);
    head = std::move(sides->second);
    labels = {options->base_filter + " in " + options->base_path,
              options->head_filter + " in " + options->base_path};
  } else {
    head = LoadRun(options->head_path);
  }
  if (!head.ok()) {
    err << "skiff-compare: " << head.status().message() << "\n";
    return kBadInput;
  }
  Comparison c = Compare(*base, *head, options->settings);
  switch (options->format) {
    case Format::kTable:
      out << RenderTable(c, labels);
      break;
    case Format::kMarkdown:
      out << RenderMarkdown(c, labels);
      break;
    case Format::kJson:
      out << RenderJson(c, labels);
      break;
  }
  return static_cast<int>(c.exit_code);
}

}  // namespace skiff::compare
