// skiff-faults: the fault runs of test/faults for longer than CI allows.
//
//   skiff-faults kill-loop [--store sqlite|postgres|URL] [--cycles N]
//                          [--durability commit|memory] [--seed N]
//   skiff-faults soak [--store sqlite|postgres|URL] [--minutes N] [--window-s N]
//
// `sqlite` (the default) makes a fresh file in a temp dir; `postgres` a fresh
// schema on the test PostgreSQL (SKIFF_TEST_POSTGRES_URL or tools/pg-up).
// Exits 64 on bad arguments, 1 when a check failed: an acknowledged write
// lost (commit durability), a counter outside [acknowledged, sent], a push
// applied other than once; for soak, errors, the last window below 0.8x the
// first (ops/s or ops per server CPU second) or a resident set that keeps
// growing.
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cmd/command_line.h"
#include "support/crash_loop.h"
#include "support/temp_dir.h"
#include "support/test_store.h"

namespace {

void Say(const std::string& line) {
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

struct FaultsOptions {
  std::string store = "sqlite";
  std::string durability = "commit";
  int cycles = 20;
  int minutes = 10;
  int window_s = 10;
  uint32_t seed = 1;
};

// The table: two commands, each with its options (name, type, default, help).
void AddCommands(CLI::App& app, FaultsOptions& o) {
  skiff::cmd::UseSkiffConventions(app);
  app.require_subcommand(1);
  const auto store = [&o](CLI::App* command) {
    command
        ->add_option("--store", o.store,
                     "sqlite: a fresh file in a temp dir; postgres: a fresh schema on the test "
                     "PostgreSQL (SKIFF_TEST_POSTGRES_URL or tools/pg-up); or a store URL")
        ->type_name("sqlite|postgres|URL")
        ->capture_default_str();
  };
  CLI::App* kill_loop = app.add_subcommand(
      "kill-loop",
      "Kills skiffd with SIGKILL under load, again and again; exits 1 when an acknowledged "
      "write was lost (commit durability), a counter is outside [acknowledged, sent] or a push "
      "was applied other than once");
  store(kill_loop);
  kill_loop->add_option("--cycles", o.cycles, "kill and restart this many times")
      ->type_name("N")
      ->transform(skiff::cmd::WholeNumber())
      ->check(CLI::Range(1, 1'000'000))
      ->capture_default_str();
  kill_loop->add_option("--durability", o.durability, "the server's durability")
      ->check(CLI::IsMember({"commit", "memory"}))
      ->capture_default_str();
  kill_loop->add_option("--seed", o.seed, "seed of the load and of the kill times")
      ->type_name("N")
      ->transform(skiff::cmd::WholeNumber())
      ->check(CLI::Range(uint32_t{0}, UINT32_MAX))
      ->capture_default_str();
  CLI::App* soak = app.add_subcommand(
      "soak",
      "A steady load for a long time; exits 1 on an error, a wrong counter, a last window "
      "below 0.8x the first (ops/s or ops per server CPU second) or a resident set that "
      "keeps growing");
  store(soak);
  soak->add_option("--minutes", o.minutes, "how long the load runs")
      ->type_name("N")
      ->transform(skiff::cmd::WholeNumber())
      ->check(CLI::Range(1, 7 * 24 * 60))
      ->capture_default_str();
  soak->add_option("--window-s", o.window_s, "seconds of each measured window")
      ->type_name("N")
      ->transform(skiff::cmd::WholeNumber())
      ->check(CLI::Range(1, 86'400))
      ->capture_default_str();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("The fault runs of test/faults for longer than CI allows (docs/faults.md).",
               "skiff-faults");
  FaultsOptions options;
  AddCommands(app, options);
  const int exit_code = skiff::cmd::ParseOrExitCode(
      app, std::vector<std::string>(argv + 1, argv + argc), std::cout, std::cerr);
  if (exit_code >= 0) return exit_code;
  const std::string& store = options.store;
  const std::string& durability = options.durability;
  // A fresh store the run owns: a file, or a schema dropped at the end.
  skiff::support::TempDir dir;
  std::unique_ptr<skiff::support::TestStore> schema;
  std::string url = store;
  if (store == "sqlite") {
    url = "sqlite:" + dir.File("skiff.db");
  } else if (store == "postgres") {
    auto opened = skiff::support::TestStore::Open("postgres");
    if (!opened.ok()) {
      std::fprintf(stderr, "skiff-faults: %s\n", opened.status().ToString().c_str());
      return 1;
    }
    schema = std::move(*opened);
    schema->Close();  // the schema stays; skiffd opens it
    url = schema->url();
  }

  if (app.got_subcommand("kill-loop")) {
    skiff::support::CrashLoopOptions o;
    o.skiffd = SKIFFD_PATH;
    o.store_url = url;
    o.cycles = options.cycles;
    o.durability = durability;
    o.seed = options.seed;
    o.log = Say;
    auto report = skiff::support::RunCrashLoop(o);
    if (!report.ok()) {
      std::fprintf(stderr, "skiff-faults: %s\n", report.status().ToString().c_str());
      return 1;
    }
    Say("result: " + report->Summary());
    for (const std::string& v : report->violations) Say("VIOLATION: " + v);
    const bool lost = durability == "commit" && report->acked_lost > 0;
    return report->violations.empty() && !lost ? 0 : 1;
  }
  if (app.got_subcommand("soak")) {
    skiff::support::SoakOptions o;
    o.skiffd = SKIFFD_PATH;
    o.store_url = url;
    o.budget = std::chrono::minutes(options.minutes);
    o.window = std::chrono::seconds(options.window_s);
    o.log = Say;
    auto report = skiff::support::RunSoak(o);
    if (!report.ok()) {
      std::fprintf(stderr, "skiff-faults: %s\n", report.status().ToString().c_str());
      return 1;
    }
    Say(report->Summary());
    for (const std::string& v : report->violations) Say("VIOLATION: " + v);
    const bool degraded =
        report->last_to_first_ops < 0.8 || report->last_to_first_ops_per_cpu < 0.8;
    if (degraded) Say("FAILED: the last window fell below 0.8x the first");
    if (report->rss_keeps_growing) Say("FAILED: the server's resident set keeps growing");
    return report->errors == 0 && report->violations.empty() && !degraded &&
                   !report->rss_keeps_growing
               ? 0
               : 1;
  }
  return skiff::cmd::kUsageExit;  // require_subcommand(1) leaves no other case
}
