// The fault runs that real skiffd processes go through, shared by the
// permanent tests (test/faults) and the `skiff-faults` tool that runs them
// longer:
//
// - RunCrashLoop: N cycles of mixed writes (sets of new keys, adds on
//   shared counters, merges of new members, a device's pushes) through a
//   skiffd child process, SIGKILL at a random moment, a check of the store
//   against everything acknowledged so far, and a restart on the same store
//   and port. Every acknowledged write must be there (commit durability;
//   memory durability may lose the window it documents, which is measured),
//   each counter within [acknowledged, sent], and in the end every pushed
//   change applied exactly once.
// - RunSoak: the same mixed writes plus reads for a time budget, reporting
//   ops/s, the server's CPU and resident set per window.
//
// Both need skiffd's path and a store URL the caller owns (a fresh SQLite
// file or PostgreSQL schema). They use 127.0.0.1 only and stop only the
// processes they start. Thread-compatible.
#ifndef SKIFF_SUPPORT_CRASH_LOOP_H_
#define SKIFF_SUPPORT_CRASH_LOOP_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/status.h"

namespace skiff::support {

struct CrashLoopOptions {
  std::string skiffd;     // path of the binary
  std::string store_url;  // sqlite:PATH or postgresql://...
  int cycles = 5;
  std::string durability = "commit";              // or "memory"
  std::chrono::milliseconds flush_interval{100};  // memory durability
  // The kill comes this long after the load started, uniformly at random.
  std::chrono::milliseconds kill_after_min{150};
  std::chrono::milliseconds kill_after_max{900};
  uint32_t seed = 1;
  // Progress lines (one per cycle); may be empty.
  std::function<void(const std::string&)> log;
};

struct CrashLoopReport {
  int cycles = 0;
  uint64_t sets_acked = 0;
  uint64_t adds_sent = 0;
  uint64_t adds_acked = 0;
  uint64_t merges_acked = 0;
  uint64_t pushes_acked = 0;  // device changes the server confirmed
  uint64_t changes_stored = 0;
  // Acknowledged writes missing from the store after a kill (must be 0 in
  // commit durability), and for memory durability the longest time between
  // a lost write's acknowledgement and the kill.
  uint64_t acked_lost = 0;
  double max_lost_window_ms = 0;
  std::vector<std::string> violations;  // empty when every check held
  std::string Summary() const;
};

// unavailable when skiffd cannot be started or reached; otherwise the
// report, whose `violations` say what did not hold.
Result<CrashLoopReport> RunCrashLoop(const CrashLoopOptions& options);

struct SoakOptions {
  std::string skiffd;
  std::string store_url;
  std::chrono::seconds budget{60};
  std::chrono::seconds window{10};
  std::function<void(const std::string&)> log;
};

struct SoakWindow {
  double ops_per_s = 0;
  double ops_per_server_cpu_s = 0;  // ops per second of skiffd's CPU
  int64_t server_rss_bytes = 0;     // at the window's end
};

struct SoakReport {
  std::vector<SoakWindow> windows;
  uint64_t errors = 0;
  std::vector<std::string> violations;  // wrong reads or counters
  // The verdicts the issue asks for: the last window against the first
  // (ops/s and ops per CPU second), and whether the resident set grew in
  // every window of the second half by more than 10 % overall.
  double last_to_first_ops = 0;
  double last_to_first_ops_per_cpu = 0;
  bool rss_keeps_growing = false;
  std::string Summary() const;
};

Result<SoakReport> RunSoak(const SoakOptions& options);

}  // namespace skiff::support

#endif  // SKIFF_SUPPORT_CRASH_LOOP_H_
