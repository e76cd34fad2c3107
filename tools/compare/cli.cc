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

Compares two Google Benchmark JSON outputs (--benchmark_out_format=json).
Benchmarks are matched by run_name; per-repetition rows are the samples.

Options:
  --format table|markdown|json  output format (default table)
  --threshold PCT        smallest median change called faster/slower (default 5)
  --alpha P              significance level of the Mann-Whitney U test (default 0.05)
  --max-cv PCT           coefficient of variation above which a benchmark is
                         unstable (default: the threshold)
  --min-repetitions N    fewer samples per side give "too few repetitions" (default 3)
  --cpu-time             judge cpu_time instead of real_time
  --fail-on-slower       exit 4 when a benchmark is slower
  -h, --help             this text

Verdicts: faster / slower need both p < alpha and a change >= threshold;
unstable when CV > max-cv on either side; too few repetitions when a side has
fewer than N samples or the test cannot reach alpha with that many.
Deterministic counters (context.skiff_counter_kinds) must be equal (relative
tolerance 1e-9); info counters are shown, never judged.

Exit codes (the first that applies wins):
  3  bad input: unreadable file, malformed JSON, wrong shape, bad arguments
  2  a benchmark errored in HEAD or was removed from HEAD
  1  a deterministic counter changed
  4  a benchmark is slower and --fail-on-slower was given
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
  if (o.help) return o;
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
  auto options = ParseCliOptions(args);
  if (!options.ok()) {
    err << "skiff-compare: " << options.status().message() << "\n"
        << "Try skiff-compare --help.\n";
    return kBadInput;
  }
  if (options->help) {
    out << HelpText();
    return 0;
  }
  auto base = LoadRun(options->base_path);
  if (!base.ok()) {
    err << "skiff-compare: " << base.status().message() << "\n";
    return kBadInput;
  }
  auto head = LoadRun(options->head_path);
  if (!head.ok()) {
    err << "skiff-compare: " << head.status().message() << "\n";
    return kBadInput;
  }
  Comparison c = Compare(*base, *head, options->settings);
  ReportLabels labels{options->base_path, options->head_path};
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
