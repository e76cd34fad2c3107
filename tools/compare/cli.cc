#include "compare/cli.h"

#include <charconv>
#include <cmath>

#include "compare/report.h"
#include "compare/run.h"

namespace skiff::compare {
namespace {

Result<double> ParseDouble(const std::string& flag, const std::string& text) {
  double v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v)) {
    return BadRequest(flag + " needs a number, got \"" + text + "\"");
  }
  return v;
}

Result<int> ParseInt(const std::string& flag, const std::string& text) {
  int v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) {
    return BadRequest(flag + " needs a whole number, got \"" + text + "\"");
  }
  return v;
}

}  // namespace

std::string HelpText() {
  return R"(Usage: skiff-compare [OPTIONS] BASE.json HEAD.json
       skiff-compare [OPTIONS] --filters BASE_RE HEAD_RE RUN.json

Compares two Google Benchmark JSON outputs (--benchmark_out_format=json).
Benchmarks are matched by run_name; per-repetition rows are the samples.
With --filters, both sides come from one run: the benchmarks whose name
matches BASE_RE against those matching HEAD_RE, paired by name with the
match replaced by "*" (two stores side by side: --filters sqlite postgres).

Options:
  --format table|markdown|json  output format (default table)
  --threshold PCT        smallest median change called faster/slower (default 5)
  --alpha P              significance level of the Mann-Whitney U test (default 0.05)
  --max-cv PCT           coefficient of variation above which a benchmark is
                         unstable (default: the threshold)
  --min-repetitions N    fewer samples per side give "too few repetitions" (default 3)
  --cpu-time             judge cpu_time instead of real_time
  --fail-on-slower       exit 4 when a benchmark is slower or a judged counter worse
  --filters BASE_RE HEAD_RE  compare two sets of benchmarks of one run
  --version              the version of this build
  -h, --help             this text

Times are judged per item (1e9 / items_per_second) when both sides report a
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
)";
}

Result<CliOptions> ParseCliOptions(const std::vector<std::string>& args) {
  CliOptions o;
  std::vector<std::string> positional;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string arg = args[i];
    std::string value;
    bool has_value = false;
    if (arg.rfind("--", 0) == 0) {
      if (auto eq = arg.find('='); eq != std::string::npos) {
        value = arg.substr(eq + 1);
        arg = arg.substr(0, eq);
        has_value = true;
      }
    }
    auto take = [&]() -> Result<std::string> {
      if (has_value) return value;
      if (i + 1 >= args.size()) return BadRequest(arg + " needs a value");
      return args[++i];
    };
    if (arg == "-h" || arg == "--help") {
      o.help = true;
    } else if (arg == "--version") {
      o.version = true;
    } else if (arg == "--filters") {
      if (has_value) return BadRequest("--filters takes two values: --filters BASE_RE HEAD_RE");
      if (i + 2 >= args.size()) return BadRequest("--filters needs BASE_RE and HEAD_RE");
      o.base_filter = args[++i];
      o.head_filter = args[++i];
      if (o.base_filter.empty() || o.head_filter.empty()) {
        return BadRequest("--filters needs two non-empty patterns");
      }
      o.settings.within_run = true;
    } else if (arg == "--format") {
      auto v = take();
      if (!v.ok()) return v.status();
      if (*v == "table") {
        o.format = Format::kTable;
      } else if (*v == "markdown") {
        o.format = Format::kMarkdown;
      } else if (*v == "json") {
        o.format = Format::kJson;
      } else {
        return BadRequest("--format must be table, markdown or json, not \"" + *v + "\"");
      }
    } else if (arg == "--threshold" || arg == "--alpha" || arg == "--max-cv") {
      auto v = take();
      if (!v.ok()) return v.status();
      auto d = ParseDouble(arg, *v);
      if (!d.ok()) return d.status();
      if (arg == "--alpha") {
        if (*d <= 0 || *d >= 1) return BadRequest("--alpha must be between 0 and 1");
        o.settings.alpha = *d;
      } else if (*d < 0) {
        return BadRequest(arg + " must not be negative");
      } else if (arg == "--threshold") {
        o.settings.threshold_pct = *d;
      } else {
        o.settings.max_cv_pct = *d;
      }
    } else if (arg == "--min-repetitions") {
      auto v = take();
      if (!v.ok()) return v.status();
      auto n = ParseInt(arg, *v);
      if (!n.ok()) return n.status();
      if (*n < 1) return BadRequest("--min-repetitions must be at least 1");
      o.settings.min_repetitions = *n;
    } else if (arg == "--cpu-time" || arg == "--fail-on-slower") {
      if (has_value) return BadRequest(arg + " takes no value");
      (arg == "--cpu-time" ? o.settings.cpu_time : o.settings.fail_on_slower) = true;
    } else if (arg.size() > 1 && arg[0] == '-') {
      return BadRequest("unknown option " + arg);
    } else {
      positional.push_back(arg);
    }
  }
  if (o.help || o.version) return o;
  if (o.settings.within_run) {
    if (positional.size() != 1) {
      return BadRequest("with --filters, expected one RUN.json, got " +
                        std::to_string(positional.size()) + " file argument(s)");
    }
    o.base_path = o.head_path = positional[0];
    return o;
  }
  if (positional.size() != 2) {
    return BadRequest("expected BASE.json and HEAD.json, got " + std::to_string(positional.size()) +
                      " file argument(s)");
  }
  o.base_path = positional[0];
  o.head_path = positional[1];
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
