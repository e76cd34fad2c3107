// RunFailover: skiffd through failovers of its PostgreSQL, shared by the
// permanent test (test/faults/postgres_failover_test.cc) and `skiff-faults
// failover`, which runs more cycles. A primary and a standby under
// pg_auto_failover (support/pg_ha.h, a state directory of the run's own),
// one skiffd child process on the multi-host URL, a load of sets on unique
// keys and contended adds on shared counters, and per cycle one fault of
// the primary:
//   kill        its node's process group (keeper and PostgreSQL) SIGKILLed,
//               then brought back as the standby (tools/pg-ha rejoin);
//   freeze      every process of the node SIGSTOPped until writes are
//               accepted again on the new primary, then thawed (it must
//               rejoin as the standby by itself); after the thaw the
//               caller's `after_thaw` runs its own checks on the two
//               nodes, and the load must go on;
//   switchover  a planned switchover (pg_autoctl perform switchover).
// Checked as a history, Jepsen-style, after the last cycle: every
// acknowledged set read back with its value through skiffd (no read older
// than a write acknowledged before it) and from the store once skiffd has
// stopped; every counter within [acknowledged adds, attempted adds].
//
// Times per cycle, all from the fault (taken just before the signal or the
// switchover command): the manager's detection and promotion (the
// monitor's events assigning the standby prepare_promotion, then
// wait_primary or primary, and the standby reporting it: the monitor's
// now() on the host's system clock), and the first write acknowledged after the outage (the end
// of the longest stretch after the fault in which skiffd acknowledged no
// write, on the steady clock: a write sent just after the fault may still
// be acknowledged by the old primary).
//
// 127.0.0.1 only; stops only the processes it started. Thread-compatible.
#ifndef SKIFF_SUPPORT_FAILOVER_RUN_H_
#define SKIFF_SUPPORT_FAILOVER_RUN_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/status.h"
#include "support/pg_ha.h"

namespace skiff::support {

struct FailoverOptions {
  std::string skiffd;         // path of the binary
  std::string tools_dir;      // holds pg-ha
  std::string kind = "kill";  // kill, freeze or switchover
  int cycles = 1;
  bool synchronous = true;       // the standby in the write quorum
  std::string tag = "failover";  // names the pg-ha state directory
  // Writes acknowledged after each outage before the next fault (or the
  // checks), so every cycle runs load on its new primary.
  int64_t acked_after_outage = 300;
  // Progress lines (one per cycle); may be empty.
  std::function<void(const std::string&)> log;
  // freeze only, may be empty: called right after the frozen node is
  // thawed, while the load runs, with that node and the one that took
  // writes during the freeze (the pair is still up). Not called when the
  // new primary could not be found (a violation).
  std::function<void(const PgHaNode& old_primary, const PgHaNode& new_primary)> after_thaw;
};

struct FailoverCycle {
  std::string kind;
  std::string old_primary;  // the node the fault hit
  int64_t acked = 0;        // writes acknowledged during the cycle
  int64_t failed = 0;
  int64_t outcome_unknown = 0;
  // From the fault, -1 when unknown: the monitor assigned the standby
  // prepare_promotion (for a kill or a freeze: the fault detected), then
  // wait_primary or primary (promoted), and the standby's keeper reported
  // reaching it.
  double to_detected_s = -1;
  double to_promoted_s = -1;
  double to_reported_s = -1;
  double to_first_write_s = -1;  // the first write acknowledged after the outage
  // freeze only: the processes stopped, and the writes sent after the
  // thaw that were acknowledged before the cycle ended.
  size_t frozen = 0;
  int64_t acked_after_thaw = 0;
  // The part Skiff owns: the manager's promotion to the first acknowledged
  // write. It includes the keeper applying the new state (for wait_primary:
  // no longer waiting for a standby), which the monitor does not see.
  bool timed() const { return to_promoted_s >= 0 && to_first_write_s >= 0; }
  double promoted_to_write_s() const { return to_first_write_s - to_promoted_s; }
};

struct FailoverReport {
  std::string kind;
  bool synchronous = true;
  std::vector<FailoverCycle> cycles;
  size_t acked_sets = 0;
  size_t lost = 0;             // acknowledged sets missing from the store
  size_t stale_reads = 0;      // read through skiffd older than the acknowledged set
  int64_t counters_below = 0;  // under their acknowledged adds (lost adds)
  int64_t counters_above = 0;  // over their attempted adds (applied twice)
  std::string counters;        // "acked/final/attempted" per counter
  int64_t failed = 0;
  int64_t outcome_unknown = 0;
  // Failures that were not a store's (a client timeout, a lost
  // connection), and cycles in which writes were not accepted again.
  std::vector<std::string> violations;
  // One line, as the tests print it.
  std::string Summary() const;
  // One line per cycle.
  std::string CycleLine(size_t i) const;
  // What must hold: nothing lost or stale, every counter in its bounds
  // (with an asynchronous standby only "not over attempted"), no violation.
  bool Holds() const;
};

// unavailable when the pair or skiffd could not be started; otherwise the
// report, whose fields say what held.
Result<FailoverReport> RunFailover(const FailoverOptions& options);

}  // namespace skiff::support

#endif  // SKIFF_SUPPORT_FAILOVER_RUN_H_
