#include "support/suite_options.h"

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

#include <CLI/CLI.hpp>
#include <unistd.h>

namespace skiff::bench {
namespace {

SuiteOptions& Mutable() {
  static auto* options = new SuiteOptions();  // read until exit
  return *options;
}

struct SkipList {
  std::mutex mu;
  std::map<std::string, bool> names;  // name -> used; SKIFF_GUARDED_BY(mu)
};

SkipList& Skips() {
  static auto* skips = new SkipList();  // read until exit
  return *skips;
}

// Google Benchmark flags that take no value; every other one does, so
// "--benchmark_filter X" can be joined into "--benchmark_filter=X".
const std::set<std::string>& BenchmarkBoolFlags() {
  static const auto* flags = new std::set<std::string>{
      "--benchmark_list_tests", "--benchmark_report_aggregates_only",
      "--benchmark_display_aggregates_only", "--benchmark_counters_tabular",
      "--benchmark_enable_random_interleaving"};
  return *flags;
}

std::vector<std::string> SplitList(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream list(text);
  for (std::string item; std::getline(list, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

// The table. Each entry: flag, variable, help; defaults are shown from the
// bound values, so the help text can never disagree with the code.
void AddOptions(CLI::App& app, SuiteOptions& o, std::string* stores, std::string* profile,
                std::string* skip) {
  const std::string run = "What runs (every family)";
  app.add_option("--store", *stores,
                 "stores to run: a list of memory, sqlite, postgres, or all. PostgreSQL comes "
                 "from SKIFF_TEST_POSTGRES_URL, else tools/pg-up (stopped again at exit)")
      ->envname("SKIFF_BENCH_STORE")
      ->capture_default_str()
      ->group(run);
  app.add_option("--profile", *profile,
                 "budget of each case: quick (x0.25), standard (x1), full (x3)")
      ->envname("SKIFF_BENCH_PROFILE")
      ->check(CLI::IsMember({"quick", "standard", "full"}))
      ->capture_default_str()
      ->group(run);
  app.add_option("--filter", o.filter,
                 "run the cases whose family name or case name matches this regular "
                 "expression; a family with no match runs nothing and exits 5")
      ->envname("SKIFF_BENCH_FILTER")
      ->group(run);
  app.add_option("--skip", *skip,
                 "comma-separated case names not to run (a name also skips the cases "
                 "below it: 'spike-burst/idle->flood' skips '.../sqlite/commit')")
      ->envname("SKIFF_BENCH_SKIP")
      ->group(run);
  app.add_option("--label", o.label, "names the machine in the JSON context")
      ->envname("SKIFF_BENCH_LABEL")
      ->group(run);
  app.add_option("--run-id", o.run_id, "names the run in the JSON context (tools/bench sets it)")
      ->envname("SKIFF_BENCH_RUN_ID")
      ->group(run);

  const std::string e2e = "End-to-end families (kv, contention, transport)";
  E2eOptions& e = o.e2e;
  app.add_option("--durability", e.durability, "durability of a server started here")
      ->envname("SKIFF_BENCH_DURABILITY")
      ->check(CLI::IsMember({"commit", "memory"}))
      ->capture_default_str()
      ->group(e2e);
  app.add_option("--concurrency", e.concurrency, "connections of the pipelined and contended cases")
      ->envname("SKIFF_BENCH_CONCURRENCY")
      ->check(CLI::Range(1, 20000))
      ->capture_default_str()
      ->group(e2e);
  app.add_option("--pipeline", e.pipeline, "requests in flight per connection")
      ->envname("SKIFF_BENCH_PIPELINE")
      ->check(CLI::Range(1, 4095))
      ->capture_default_str()
      ->group(e2e);
  app.add_option("--timeout", e.timeout_ms, "per-request timeout, milliseconds")
      ->envname("SKIFF_BENCH_TIMEOUT_MS")
      ->check(CLI::Range(1, 3'600'000))
      ->capture_default_str()
      ->group(e2e);
  app.add_option("--cap", e.cap_ms,
                 "wall-time budget per scenario, milliseconds (0: 25000 x the profile's scale)")
      ->envname("SKIFF_BENCH_CAP_MS")
      ->check(CLI::Range(0, 86'400'000))
      ->capture_default_str()
      ->group(e2e);
  app.add_option("--server", e.server,
                 "run skiffd in this process or as a child process (child-tls: serving wss://)")
      ->envname("SKIFF_BENCH_SERVER")
      ->check(CLI::IsMember({"inprocess", "child", "child-tls"}))
      ->capture_default_str()
      ->group(e2e);
  app.add_option("--url", e.url, "use the running server at ws:// or wss://HOST:PORT instead")
      ->envname("SKIFF_URL")
      ->check([](const std::string& v) {
        std::string host;
        uint16_t port = 0;
        return ParseWsUrl(v, &host, &port) ? "" : "takes ws:// or wss://HOST:PORT, not '" + v + "'";
      })
      ->group(e2e);
  AddE2eTlsFlags(app, e, e2e);
  app.add_option("--user", e.user, "user for --url")->envname("SKIFF_USER")->group(e2e);
  app.add_option("--secret", e.secret, "secret of --user")->envname("SKIFF_SECRET")->group(e2e);
  app.add_option("--bun", e.bun,
                 "path of a bun binary: also run the compared scenarios against the Bun peer")
      ->envname("SKIFF_BENCH_BUN")
      ->group(e2e);
  app.add_option("--skiffd", e.skiffd,
                 "path of another skiffd binary for the families that start one as a child "
                 "process (compare two builds in one run)")
      ->envname("SKIFF_BENCH_SKIFFD")
      ->group(e2e);
  app.add_option("--skiffd-arg", e.skiffd_args,
                 "one more flag for a skiffd child process, e.g. --skiffd-arg=--io-threads=2 "
                 "(repeatable)")
      ->group(e2e);
  app.add_option("--test-drop-one-add-in", e.drop_one_add_in,
                 "test only: the in-process server acknowledges one add in N without applying it")
      ->check(CLI::Range(0u, 1'000'000'000u))
      ->group(e2e);

  const std::string memory = "Memory family (memory_bench; 0 keeps the profile's size)";
  app.add_option("--memory-documents", o.memory_documents, "documents loaded")
      ->envname("SKIFF_MEMORY_DOCUMENTS")
      ->check(CLI::Range(int64_t{0}, int64_t{10'000'000}))
      ->group(memory);
  app.add_option("--memory-pack-after", o.memory_pack_after_s, "seconds idle before packing")
      ->envname("SKIFF_MEMORY_PACK_AFTER_S")
      ->check(CLI::Range(int64_t{0}, int64_t{86'400}))
      ->group(memory);
  app.add_option("--memory-evict-after", o.memory_evict_after_s, "seconds idle before eviction")
      ->envname("SKIFF_MEMORY_EVICT_AFTER_S")
      ->check(CLI::Range(int64_t{0}, int64_t{86'400}))
      ->group(memory);
  app.add_option("--memory-idle", o.memory_idle_s, "seconds of the idle phase")
      ->envname("SKIFF_MEMORY_IDLE_S")
      ->check(CLI::Range(int64_t{0}, int64_t{86'400}))
      ->group(memory);

  const std::string geo = "Geo family (geo_bench; 0 keeps the profile's size)";
  app.add_option("--geo-points", o.geo_points, "points inserted (0, or 100 and more)")
      ->envname("SKIFF_GEO_POINTS")
      ->check(CLI::Range(int64_t{0}, int64_t{10'000'000}))
      ->check([](const std::string& v) {
        return v == "0" || std::strtoll(v.c_str(), nullptr, 10) >= 100 ? "" : "0, or 100 and more";
      })
      ->group(geo);
  app.add_option("--geo-search-seconds", o.geo_search_seconds, "wall-time budget of each search")
      ->envname("SKIFF_GEO_SEARCH_S")
      ->check(CLI::Range(0.0, 3600.0))
      ->group(geo);
  app.add_option("--geo-move-seconds", o.geo_move_seconds, "wall-time budget of sustained moves")
      ->envname("SKIFF_GEO_MOVE_S")
      ->check(CLI::Range(0.0, 3600.0))
      ->group(geo);
  app.add_option("--geo-check", o.geo_check, "queries held against the oracle per check")
      ->envname("SKIFF_GEO_CHECK")
      ->check(CLI::Range(int64_t{0}, int64_t{10'000}))
      ->group(geo);
  app.add_option("--geo-connections", o.geo_connections, "client connections to each peer")
      ->envname("SKIFF_GEO_CONNECTIONS")
      ->check(CLI::Range(int64_t{1}, int64_t{256}))
      ->capture_default_str()
      ->group(geo);
  app.add_option("--geo-targets", o.geo_targets,
                 "comma-separated targets: redis, tarantool, postgres-point, postgis, "
                 "sqlite-rtree, skiffd-sqlite-commit, skiffd-sqlite-memory, "
                 "skiffd-postgres-commit, index (the in-process index); all when not given")
      ->envname("SKIFF_GEO_TARGETS")
      ->delimiter(',')
      ->check(CLI::IsMember({"redis", "tarantool", "postgres-point", "postgis", "sqlite-rtree",
                             "skiffd-sqlite-commit", "skiffd-sqlite-memory",
                             "skiffd-postgres-commit", "index"}))
      ->group(geo);
  app.add_option("--geo-near-form", o.geo_near_form,
                 "skiffd's near reply: columns (parallel arrays) or items (an object each)")
      ->envname("SKIFF_GEO_NEAR_FORM")
      ->check(CLI::IsMember({"columns", "items"}))
      ->capture_default_str()
      ->group(geo);
}

constexpr char kFooter[] = R"(
Google Benchmark's flags pass through, as --benchmark_x=v or --benchmark_x v:
  --benchmark_filter=RE --benchmark_repetitions=N --benchmark_min_time=S
  --benchmark_out=FILE --benchmark_format=console|json|csv --benchmark_list_tests
--help-benchmark lists all of them. The profile sets --benchmark_min_time
unless it is given.

Exit codes (the suite's scheme, docs/benchmarks.md):
  0 every case passed its checks   2 a case failed (errored or a check broke)
  5 no case selected (filter, skip) 64 bad arguments)";

Status ApplyLists(SuiteOptions& o, const std::string& stores, const std::string& profile,
                  const std::string& skip) {
  o.bench.stores.clear();
  for (const std::string& kind : SplitList(stores)) {
    if (kind == "all") {
      o.bench.stores.insert({"memory", "sqlite", "postgres"});
    } else if (kind == "memory" || kind == "sqlite" || kind == "postgres") {
      o.bench.stores.insert(kind);
    } else {
      return BadRequest("--store: unknown store '" + kind + "': use memory, sqlite, postgres, all");
    }
  }
  if (o.bench.stores.empty()) return BadRequest("--store: name at least one store");
  o.bench.profile = profile == "quick"  ? Profile::kQuick
                    : profile == "full" ? Profile::kFull
                                        : Profile::kStandard;
  SkipList& skips = Skips();
  std::lock_guard lock(skips.mu);
  skips.names.clear();
  for (const std::string& name : SplitList(skip)) skips.names.emplace(name, false);
  return Status::Ok();
}

// Google Benchmark's flags as one argument each; anything else left over is
// a mistake the user should hear about.
Result<std::vector<std::string>> BenchmarkArgs(const std::vector<std::string>& extras) {
  std::vector<std::string> out;
  for (size_t i = 0; i < extras.size(); ++i) {
    const std::string& arg = extras[i];
    if (arg.rfind("--benchmark_", 0) != 0 && arg.rfind("--v=", 0) != 0) {
      return BadRequest("unknown argument '" + arg + "' (see --help)");
    }
    if (arg.find('=') != std::string::npos || BenchmarkBoolFlags().count(arg) > 0) {
      out.push_back(arg);
      continue;
    }
    if (i + 1 >= extras.size()) return BadRequest(arg + " needs a value");
    out.push_back(arg + "=" + extras[++i]);
  }
  return out;
}

}  // namespace

Result<ParsedCommandLine> ParseSuiteCommandLine(int argc, const char* const* argv,
                                                const std::string& family) {
  SuiteOptions& o = Mutable();
  o = SuiteOptions();
  CLI::App app("Skiff benchmark family " + family +
                   ": a Google Benchmark executable with the suite's main (docs/benchmarks.md).",
               family);
  app.get_formatter()->column_width(32);
  app.allow_extras();
  bool benchmark_help = false;
  app.add_flag("--help-benchmark", benchmark_help, "Google Benchmark's own help");
  app.set_version_flag("--version", std::string(SKIFF_VERSION));
  app.footer(kFooter);
  std::string stores = "all";
  std::string profile = "standard";
  std::string skip;
  AddOptions(app, o, &stores, &profile, &skip);
  ParsedCommandLine parsed;
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    parsed.action = ParsedCommandLine::Action::kHelp;
    parsed.text = app.help();
    return parsed;
  } catch (const CLI::CallForVersion&) {
    parsed.action = ParsedCommandLine::Action::kVersion;
    parsed.text = family + " " + SKIFF_VERSION;
    return parsed;
  } catch (const CLI::ParseError& e) {
    return BadRequest(e.what());
  }
  if (benchmark_help) {
    parsed.action = ParsedCommandLine::Action::kBenchmarkHelp;
    return parsed;
  }
  SKIFF_RETURN_IF_ERROR(ApplyLists(o, stores, profile, skip));
  if (o.run_id.empty()) {
    // A run started by hand still gets a name, so its files can be told
    // apart from another run's.
    char id[64];
    const std::time_t now = std::time(nullptr);
    std::strftime(id, sizeof id, "%Y%m%dT%H%M%SZ", std::gmtime(&now));
    o.run_id = std::string(id) + "-" + std::to_string(getpid());
  }
  if (!o.e2e.url.empty() && o.e2e.user.empty())
    return BadRequest("--url needs --user and --secret");
  Result<std::vector<std::string>> benchmark_args = BenchmarkArgs(app.remaining());
  if (!benchmark_args.ok()) return benchmark_args.status();
  parsed.benchmark_args = std::move(*benchmark_args);
  for (const std::string& arg : parsed.benchmark_args) {
    if (arg.rfind("--benchmark_out=", 0) == 0) o.json_out = arg.substr(16);
  }
  return parsed;
}

const SuiteOptions& GetSuiteOptions() { return Mutable(); }

bool SkipRequested(const std::string& name) {
  SkipList& skips = Skips();
  std::lock_guard lock(skips.mu);
  for (auto& [skip, used] : skips.names) {
    if (name == skip || (name.size() > skip.size() && name.compare(0, skip.size(), skip) == 0 &&
                         name[skip.size()] == '/')) {
      used = true;
      return true;
    }
  }
  return false;
}

std::vector<std::string> UnusedSkipNames() {
  SkipList& skips = Skips();
  std::lock_guard lock(skips.mu);
  std::vector<std::string> out;
  for (const auto& [skip, used] : skips.names) {
    if (!used) out.push_back(skip);
  }
  return out;
}

}  // namespace skiff::bench
