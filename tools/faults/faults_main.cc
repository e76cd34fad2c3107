// skiff-faults: the fault runs of test/faults for longer than CI allows.
//
//   skiff-faults kill-loop [--store sqlite|postgres|URL] [--cycles N]
//                          [--durability commit|memory] [--seed N]
//   skiff-faults soak [--store sqlite|postgres|URL] [--minutes N] [--window-s N]
//
// `sqlite` (the default) makes a fresh file in a temp dir; `postgres` a fresh
// schema on the test PostgreSQL (SKIFF_TEST_POSTGRES_URL or tools/pg-up).
// Exits 1 when a check failed: an acknowledged write lost (commit
// durability), a counter outside [acknowledged, sent], a push applied other
// than once; for soak, errors, the last window below 0.8x the first (ops/s
// or ops per server CPU second) or a resident set that keeps growing.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "support/crash_loop.h"
#include "support/temp_dir.h"
#include "support/test_store.h"

namespace {

int Usage(const std::string& problem) {
  std::fprintf(stderr,
               "skiff-faults: %s\n\n"
               "Usage: skiff-faults kill-loop [--store sqlite|postgres|URL] [--cycles N]\n"
               "                              [--durability commit|memory] [--seed N]\n"
               "       skiff-faults soak [--store sqlite|postgres|URL] [--minutes N] "
               "[--window-s N]\n",
               problem.c_str());
  return 2;
}

void Say(const std::string& line) {
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h") return Usage("what to run?");
  const std::string command = args[0];
  std::string store = "sqlite", durability = "commit";
  long cycles = 20, minutes = 10, window_s = 10, seed = 1;
  for (size_t i = 1; i < args.size(); ++i) {
    if (i + 1 >= args.size()) return Usage(args[i] + " needs a value");
    const std::string& flag = args[i];
    const std::string& value = args[++i];
    if (flag == "--store") {
      store = value;
    } else if (flag == "--durability") {
      durability = value;
    } else if (flag == "--cycles") {
      cycles = std::strtol(value.c_str(), nullptr, 10);
    } else if (flag == "--minutes") {
      minutes = std::strtol(value.c_str(), nullptr, 10);
    } else if (flag == "--window-s") {
      window_s = std::strtol(value.c_str(), nullptr, 10);
    } else if (flag == "--seed") {
      seed = std::strtol(value.c_str(), nullptr, 10);
    } else {
      return Usage("unknown flag " + flag);
    }
  }
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

  if (command == "kill-loop") {
    skiff::support::CrashLoopOptions o;
    o.skiffd = SKIFFD_PATH;
    o.store_url = url;
    o.cycles = static_cast<int>(cycles);
    o.durability = durability;
    o.seed = static_cast<uint32_t>(seed);
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
  if (command == "soak") {
    skiff::support::SoakOptions o;
    o.skiffd = SKIFFD_PATH;
    o.store_url = url;
    o.budget = std::chrono::minutes(minutes);
    o.window = std::chrono::seconds(window_s);
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
  return Usage("unknown command '" + command + "'");
}
