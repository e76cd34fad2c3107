#include "support/pg_ha.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <utility>

#include <signal.h>
#include <unistd.h>

#include "doc/document.h"

namespace skiff::support {

Result<std::string> Shell(const std::string& command) {
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return Internal("popen failed: " + command);
  std::string out;
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) out.append(buffer.data(), n);
  const int status = pclose(pipe);
  if (status != 0) {
    return Unavailable("'" + command + "' failed (status " + std::to_string(status) + ")");
  }
  return out;
}

std::string LastLine(std::string text) {
  while (!text.empty() && text.back() == '\n') text.pop_back();
  const size_t nl = text.rfind('\n');
  return nl == std::string::npos ? text : text.substr(nl + 1);
}

double WallSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

PgHa::PgHa(std::string tools_dir, const std::string& tag)
    : tools_(std::move(tools_dir)),
      state_("/tmp/skiff-pg-ha-" + tag + "-" + std::to_string(getpid())) {}

PgHa::~PgHa() {
  if (Down().ok()) std::remove((state_ + ".lock").c_str());
}

bool PgHa::Installed() { return Shell("command -v pg_autoctl >/dev/null 2>&1").ok(); }

Result<std::string> PgHa::Up(bool synchronous) {
  SKIFF_ASSIGN_OR_RETURN(std::string out, Run(synchronous ? "up" : "up --async"));
  return LastLine(out);
}

Result<PgHaNode> PgHa::Primary() {
  SKIFF_ASSIGN_OR_RETURN(std::string out, Run("describe"));
  const doc::Value cluster = doc::Value::parse(out, nullptr, /*allow_exceptions=*/false);
  if (cluster.is_discarded() || !cluster.contains("nodes")) {
    return Unavailable("tools/pg-ha describe printed " + out);
  }
  for (const char* wanted : {"wait_primary", "primary"}) {
    for (const auto& node : cluster["nodes"]) {
      if (node["state"].get<std::string>() != wanted) continue;
      return PgHaNode{node["name"].get<std::string>(), node["port"].get<int>(),
                      node["pgid"].get<int>(), node["postmaster_pid"].get<int>()};
    }
  }
  return Unavailable("no primary in " + out);
}

std::vector<int> PgHa::Processes(const PgHaNode& node) {
  std::vector<int> pids;
  if (node.postmaster_pid > 1) pids.push_back(node.postmaster_pid);
  const Result<std::string> listed =
      Shell("{ pgrep -P " + std::to_string(node.postmaster_pid) + "; pgrep -g " +
            std::to_string(node.pgid) + "; } 2>/dev/null || true");
  std::istringstream lines(listed.ok() ? *listed : "");
  std::string line;
  while (std::getline(lines, line)) {
    const int pid = std::atoi(line.c_str());
    if (pid > 1 && std::find(pids.begin(), pids.end(), pid) == pids.end()) pids.push_back(pid);
  }
  return pids;
}

std::vector<int> PgHa::Freeze(const PgHaNode& node) {
  constexpr int kMaxListings = 10;
  std::vector<int> frozen;
  for (int listing = 0; listing < kMaxListings; ++listing) {
    bool added = false;
    for (int pid : Processes(node)) {
      if (std::find(frozen.begin(), frozen.end(), pid) != frozen.end()) continue;
      kill(pid, SIGSTOP);
      frozen.push_back(pid);
      added = true;
    }
    if (!added) break;
  }
  return frozen;
}

Status PgHa::Rejoin() { return Run("rejoin").status(); }

Status PgHa::Switchover() { return Run("switchover").status(); }

Result<std::vector<PgHaEvent>> PgHa::Events() {
  SKIFF_ASSIGN_OR_RETURN(std::string out, Run("events"));
  std::vector<PgHaEvent> events;
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    PgHaEvent e;
    std::string at;
    if (!std::getline(fields, at, '\t') || !std::getline(fields, e.node, '\t') ||
        !std::getline(fields, e.reported, '\t') || !std::getline(fields, e.goal, '\t')) {
      continue;
    }
    e.at_s = std::strtod(at.c_str(), nullptr);
    events.push_back(std::move(e));
  }
  return events;
}

Result<PgHaPromotion> PgHa::PromotedAfter(const std::string& old_primary, double since_s) {
  SKIFF_ASSIGN_OR_RETURN(std::vector<PgHaEvent> events, Events());
  PgHaPromotion p;
  const auto promoted = [](const std::string& state) {
    return state == "wait_primary" || state == "primary";
  };
  for (const PgHaEvent& e : events) {
    if (e.at_s < since_s || e.node == old_primary) continue;
    if (p.started_s < 0 && e.goal == "prepare_promotion") p.started_s = e.at_s;
    if (p.promoted_s < 0 && promoted(e.goal)) p.promoted_s = e.at_s;
    if (p.reported_s < 0 && promoted(e.reported)) p.reported_s = e.at_s;
  }
  if (p.promoted_s < 0)
    return Unavailable("no node promoted since the fault in the monitor's events");
  return p;
}

Status PgHa::Down() { return Run("down").status(); }

Result<std::string> PgHa::Run(const std::string& args) {
  return Shell("SKIFF_PG_HA_STATE=" + state_ + " timeout 150 " + tools_ + "/pg-ha " + args +
               " 2>/dev/null");
}

}  // namespace skiff::support
