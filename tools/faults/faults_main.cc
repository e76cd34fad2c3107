// skiff-faults: the fault runs of test/faults for longer than CI allows.
//
//   skiff-faults kill-loop [--store sqlite|postgres|URL] [--cycles N]
//                          [--durability commit|memory] [--seed N]
//   skiff-faults soak [--store sqlite|postgres|URL] [--minutes N] [--window-s N]
//   skiff-faults failover [--kind kill|freeze|switchover] [--cycles N] [--cluster]
//                         [--async]
//
// `sqlite` (the default) makes a fresh file in a temp dir; `postgres` a fresh
// schema on the test PostgreSQL (SKIFF_TEST_POSTGRES_URL or tools/pg-up).
// Exits 64 on bad arguments, 1 when a check failed: an acknowledged write
// lost (commit durability), a counter outside [acknowledged, sent], a push
// applied other than once; for soak, errors, the last window below 0.8x the
// first (ops/s or ops per server CPU second) or a resident set that keeps
// growing; for failover, an acknowledged write lost (with the synchronous
// standby), a stale read, a counter outside [acknowledged, attempted], an
// error that was not the store's, or writes not accepted again.
//
// `failover` runs on a replicated PostgreSQL of its own (tools/pg-ha, needs
// pg_auto_failover): one skiffd through support/failover_run.h, or with
// --cluster three in cluster mode through the permanent test's binary
// (faults_postgres_cluster_failover_test, SKIFF_FAILOVER_CYCLES and
// SKIFF_FAILOVER_KIND set), which must have been built.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <sys/wait.h>

#include "cmd/command_line.h"
#include "support/crash_loop.h"
#include "support/failover_run.h"
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
  std::string kind = "kill";
  int failover_cycles = 5;
  bool cluster = false;
  bool async = false;
};

// The table: three commands, each with its options (name, type, default, help).
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
  CLI::App* failover = app.add_subcommand(
      "failover",
      "Fails the PostgreSQL primary over under load, cycle after cycle, on a replicated "
      "PostgreSQL of its own (tools/pg-ha); exits 1 when an acknowledged write was lost, a read "
      "was stale, a counter is outside [acknowledged, attempted] or writes were not accepted "
      "again");
  failover
      ->add_option("--kind", o.kind,
                   "the fault: kill -9 of the primary's node, SIGSTOP of "
                   "it until the standby is promoted, or a planned "
                   "switchover")
      ->check(CLI::IsMember({"kill", "freeze", "switchover"}))
      ->capture_default_str();
  failover->add_option("--cycles", o.failover_cycles, "this many faults")
      ->type_name("N")
      ->transform(skiff::cmd::WholeNumber())
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  skiff::cmd::AddBoolFlag(*failover, "--cluster", o.cluster,
                          "three skiffd in cluster mode (the permanent test's binary) instead "
                          "of one");
  skiff::cmd::AddBoolFlag(*failover, "--async", o.async,
                          "the standby out of the write quorum: what is lost is reported, not "
                          "a failure (not with --cluster)");
}

// Three skiffd in cluster mode: the permanent test, run with more cycles.
int RunClusterFailover(const FaultsOptions& o) {
#ifdef SKIFF_CLUSTER_FAILOVER_TEST
  const std::string test = SKIFF_CLUSTER_FAILOVER_TEST;
  const std::string command = "SKIFF_FAILOVER_CYCLES=" + std::to_string(o.failover_cycles) +
                              " SKIFF_FAILOVER_KIND=" + o.kind + " '" + test + "'";
  Say("running " + command);
  const int status = std::system(command.c_str());
  if (status == -1 || !WIFEXITED(status)) {
    std::fprintf(stderr, "skiff-faults: could not run %s (build it first)\n", test.c_str());
    return 1;
  }
  return WEXITSTATUS(status) == 0 ? 0 : 1;
#else
  (void)o;
  std::fprintf(stderr, "skiff-faults: --cluster needs the tests built (SKIFF_BUILD_TESTS)\n");
  return 1;
#endif
}

int RunFailoverCommand(const FaultsOptions& options) {
  if (options.cluster) {
    if (options.async) {
      std::fprintf(stderr, "skiff-faults: --async does not go with --cluster\n");
      return skiff::cmd::kUsageExit;
    }
    return RunClusterFailover(options);
  }
  skiff::support::FailoverOptions o;
  o.skiffd = SKIFFD_PATH;
  o.tools_dir = SKIFF_SOURCE_DIR "/tools";
  o.kind = options.kind;
  o.cycles = options.failover_cycles;
  o.synchronous = !options.async;
  o.tag = "skiff-faults";
  o.log = Say;
  auto report = skiff::support::RunFailover(o);
  if (!report.ok()) {
    std::fprintf(stderr, "skiff-faults: %s\n", report.status().ToString().c_str());
    return 1;
  }
  Say("result: " + report->Summary());
  for (const std::string& v : report->violations) Say("VIOLATION: " + v);
  return report->Holds() ? 0 : 1;
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
  if (app.got_subcommand("failover")) return RunFailoverCommand(options);
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
