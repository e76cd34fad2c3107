// PgHa: the replicated PostgreSQL of tools/pg-ha (a pg_auto_failover
// monitor, a primary and a standby), driven from a test, a benchmark or
// skiff-faults: up, which node is the primary, the processes of a node (to
// kill or freeze), the killed node back as a standby, a planned switchover,
// the monitor's events (when it promoted a node), down. Each owner keeps
// its pair in a state directory of its own, so two of them never share (or
// tear down) one pair. Thread-compatible: one owner.
#ifndef SKIFF_SUPPORT_PG_HA_H_
#define SKIFF_SUPPORT_PG_HA_H_

#include <string>
#include <vector>

#include "base/status.h"

namespace skiff::support {

// Runs `command` through the shell; its stdout, or unavailable with its
// exit status. The caller bounds the command (`timeout`).
Result<std::string> Shell(const std::string& command);

// The last line of `text`, without its newline.
std::string LastLine(std::string text);

// Seconds since the epoch, the system clock: the clock the monitor's event
// times are on (same host).
double WallSeconds();

// One node of the pair, as `tools/pg-ha describe` reports it.
struct PgHaNode {
  std::string name;
  int port = 0;
  int pgid = 0;
  int postmaster_pid = 0;
};

// One row of the monitor's pgautofailover.event.
struct PgHaEvent {
  double at_s = 0;  // seconds since the epoch, the monitor's now()
  std::string node;
  std::string reported;  // the state the node reported
  std::string goal;      // the state the monitor assigned
};

// When the monitor promoted the standby, in seconds since the epoch on the
// monitor's clock (its now() in each event; same host as the caller's
// system clock); -1 when no such event was found.
struct PgHaPromotion {
  double started_s = -1;   // the monitor assigned prepare_promotion: the fault was detected
  double promoted_s = -1;  // it assigned wait_primary or primary: the standby was promoted
  double reported_s = -1;  // the node reported reaching wait_primary or primary
};

class PgHa {
 public:
  // `tools_dir` holds pg-ha; `tag` names the state directory.
  PgHa(std::string tools_dir, const std::string& tag);
  // Down, and the lock file removed.
  ~PgHa();
  PgHa(const PgHa&) = delete;
  PgHa& operator=(const PgHa&) = delete;

  // True when pg_autoctl is on the PATH.
  static bool Installed();

  // Starts the pair; the store URL (both nodes, read-write target), or
  // unavailable when it could not be started.
  Result<std::string> Up(bool synchronous = true);
  // The node that takes writes: the one the monitor reports as
  // wait_primary (promoted, its standby gone), else the primary (a dead
  // node keeps the state it last reported).
  Result<PgHaNode> Primary();
  // Every process of `node`: its keeper's process group and its
  // PostgreSQL (the postmaster and its children, which may be in a group
  // of their own), postmaster first.
  static std::vector<int> Processes(const PgHaNode& node);
  // Stops every process of `node` with SIGSTOP and returns them (to be
  // thawed with SIGCONT). The postmaster can fork (a backend for a new
  // connection, such as the monitor's health check) between a listing and
  // its stop, and such a backend would keep serving; so the node is listed
  // again until a listing finds nothing new (at most 10 listings). Once the
  // postmaster is stopped it forks no more, so the second listing normally
  // ends it.
  static std::vector<int> Freeze(const PgHaNode& node);
  // Restarts every killed node and waits for primary + secondary.
  Status Rejoin();
  // A planned switchover; returns once the old primary is the standby of
  // the new one. unavailable when the pair was not primary + secondary or
  // it did not complete.
  Status Switchover();
  // The monitor's events, oldest first.
  Result<std::vector<PgHaEvent>> Events();
  // The manager's promotion of a node other than `old_primary` after
  // `since_s` (seconds since the epoch), read from the monitor's events;
  // unavailable when the monitor has assigned it no promotion (yet).
  Result<PgHaPromotion> PromotedAfter(const std::string& old_primary, double since_s);
  Status Down();
  const std::string& state_dir() const { return state_; }

 private:
  Result<std::string> Run(const std::string& args);

  const std::string tools_;
  const std::string state_;
};

}  // namespace skiff::support

#endif  // SKIFF_SUPPORT_PG_HA_H_
