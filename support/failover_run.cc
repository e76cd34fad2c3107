#include "support/failover_run.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include <signal.h>

#include "client/client.h"
#include "server/permissions.h"
#include "server/users.h"
#include "store/store.h"
#include "support/pg_ha.h"
#include "support/skiffd_process.h"

namespace skiff::support {
namespace {

using namespace std::chrono_literals;
using SteadyClock = std::chrono::steady_clock;

constexpr int kSetters = 2;
constexpr int kCounters = 3;
constexpr int kAddersPerCounter = 2;

int64_t NowNs() { return SteadyClock::now().time_since_epoch().count(); }

// "1.23 s", or "n/a" when `known` is false.
std::string Seconds(double s, bool known = true) {
  if (!known) return "n/a";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f s", s);
  return buf;
}

// An error the server gave about its store (expected while it fails
// over), not a client timeout or a lost connection.
bool IsStoreError(const Status& s) {
  return (s.code() == StatusCode::kUnavailable || s.code() == StatusCode::kOutcomeUnknown) &&
         (s.message().find("store") != std::string::npos ||
          s.message().find("PostgreSQL") != std::string::npos ||
          s.message().find("commit") != std::string::npos);
}

// One run: the pair, skiffd, the load and its history. The destructor
// thaws what it froze, stops the load and skiffd, then the pair.
class Run {
 public:
  explicit Run(const FailoverOptions& o) : o_(o), pg_(o.tools_dir, o.tag) {}
  ~Run() {
    Thaw();
    StopLoad();
    clients_.clear();
    (void)skiffd_.Stop();
  }

  Status Start() {
    SKIFF_ASSIGN_OR_RETURN(url_, pg_.Up(o_.synchronous));
    {
      SKIFF_ASSIGN_OR_RETURN(std::unique_ptr<store::Store> store, store::OpenStore(url_));
      SKIFF_ASSIGN_OR_RETURN(secret_,
                             server::CreateUser(*store, "ops", server::Permissions({"*"}, {"*"})));
    }
    SKIFF_RETURN_IF_ERROR(skiffd_.Start(o_.skiffd, {"--store=" + url_, "--io-threads=1"}));
    for (int i = 0; i < kSetters + kCounters * kAddersPerCounter; ++i) {
      SKIFF_ASSIGN_OR_RETURN(std::unique_ptr<client::Client> c, Connect());
      clients_.push_back(std::move(c));
    }
    StartLoad();
    return Status();
  }

  FailoverCycle Cycle(int n, bool last, FailoverReport* report) {
    FailoverCycle row;
    row.kind = o_.kind;
    const int64_t acked0 = acked_, failed0 = failed_, unknown0 = outcome_unknown_;
    if (!AwaitAcked(300, 60s)) {
      report->violations.push_back("cycle " + std::to_string(n) + ": the load did not run");
      return row;
    }
    Result<PgHaNode> primary = pg_.Primary();
    if (!primary.ok()) {
      report->violations.push_back("cycle " + std::to_string(n) + ": " +
                                   primary.status().ToString());
      return row;
    }
    row.old_primary = primary->name;
    {
      std::lock_guard lock(mu_);
      acked_after_fault_ns_.clear();
    }
    acked_after_thaw_ = 0;
    const double fault_wall = WallSeconds();
    fault_ns_ = NowNs();
    Status faulted;
    if (o_.kind == "kill") {
      if (kill(-primary->pgid, SIGKILL) != 0) faulted = Internal("kill -9 of the node failed");
    } else if (o_.kind == "freeze") {
      frozen_ = PgHa::Freeze(*primary);
      row.frozen = frozen_.size();
    } else {
      faulted = pg_.Switchover();  // blocks while the load runs on
    }
    if (!faulted.ok()) {
      report->violations.push_back("cycle " + std::to_string(n) + ": " + faulted.ToString());
    }
    // Until enough writes sent after the outage are acknowledged.
    const auto give_up = SteadyClock::now() + 90s;
    Outage outage;
    while ((outage = OutageSoFar()).acked_after < o_.acked_after_outage &&
           SteadyClock::now() < give_up) {
      std::this_thread::sleep_for(20ms);
    }
    if (outage.acked_after < o_.acked_after_outage) {
      report->violations.push_back("cycle " + std::to_string(n) +
                                   ": writes not accepted again within 90 s");
    }
    if (outage.end_ns != 0) {
      row.to_first_write_s = static_cast<double>(outage.end_ns - fault_ns_) / 1e9;
    }
    if (o_.kind == "freeze") Thawed(n, *primary, &row, report);
    if (Result<PgHaPromotion> p = pg_.PromotedAfter(row.old_primary, fault_wall); p.ok()) {
      const auto since = [fault_wall](double at) { return at < 0 ? -1 : at - fault_wall; };
      row.to_detected_s = since(p->started_s);
      row.to_promoted_s = since(p->promoted_s);
      row.to_reported_s = since(p->reported_s);
    } else {
      report->violations.push_back("cycle " + std::to_string(n) + ": " + p.status().ToString());
    }
    // The faulted node back as the standby before the next fault (a
    // switchover leaves the pair whole).
    if (!last && o_.kind != "switchover") {
      if (Status s = pg_.Rejoin(); !s.ok()) {
        report->violations.push_back(
            "cycle " + std::to_string(n) +
            ": the node did not come back as the standby: " + s.ToString());
      }
    }
    fault_ns_ = 0;
    thaw_ns_ = 0;
    row.acked = acked_ - acked0;
    row.failed = failed_ - failed0;
    row.outcome_unknown = outcome_unknown_ - unknown0;
    return row;
  }

  // Reads the history back: through skiffd first (what clients see after
  // the failovers), then from the store itself once skiffd has stopped.
  Status Check(FailoverReport* out) {
    StopLoad();
    SKIFF_ASSIGN_OR_RETURN(std::unique_ptr<client::Client> reader, Connect());
    std::lock_guard lock(mu_);
    out->acked_sets = acked_sets_.size();
    for (const auto& [key, value] : acked_sets_) {
      SKIFF_ASSIGN_OR_RETURN(std::optional<doc::Value> got, reader->Get("t", key));
      if (!got.has_value() || *got != value) ++out->stale_reads;
    }
    for (int k = 0; k < kCounters; ++k) {
      SKIFF_ASSIGN_OR_RETURN(std::optional<doc::Value> got,
                             reader->Get("t", "c" + std::to_string(k)));
      const int64_t n = got.has_value() ? got->get<int64_t>() : 0;
      const int64_t acked = acked_adds_[k], attempted = attempted_adds_[k];
      out->counters_below += std::max<int64_t>(0, acked - n);
      out->counters_above += std::max<int64_t>(0, n - attempted);
      out->counters += (k == 0 ? "" : " ") + std::to_string(acked) + "/" + std::to_string(n) + "/" +
                       std::to_string(attempted);
    }
    reader.reset();
    clients_.clear();
    SKIFF_RETURN_IF_ERROR(skiffd_.Stop());
    SKIFF_ASSIGN_OR_RETURN(std::unique_ptr<store::Store> store, store::OpenStore(url_));
    for (const auto& [key, value] : acked_sets_) {
      SKIFF_ASSIGN_OR_RETURN(std::optional<std::string> got, store->Get("t", key));
      if (got != std::to_string(value)) ++out->lost;
    }
    out->failed = failed_;
    out->outcome_unknown = outcome_unknown_;
    for (const auto& [what, n] : other_errors_) {
      out->violations.push_back("not a store error, x" + std::to_string(n) + ": " + what);
    }
    return Status();
  }

 private:
  Result<std::unique_ptr<client::Client>> Connect() {
    client::ClientOptions c;
    c.port = skiffd_.port();
    c.user = "ops";
    c.secret = secret_;
    c.connections = 1;
    c.request_timeout = 60s;
    return client::Client::Connect(c);
  }

  void StartLoad() {
    for (int t = 0; t < kSetters; ++t) {
      client::Client* c = clients_[t].get();
      load_.emplace_back([this, c, t] {
        for (int i = 0; !stop_ && i < 100'000'000; ++i) {
          const std::string key = "s" + std::to_string(t) + "-" + std::to_string(i);
          const int64_t sent = NowNs();
          if (Status s = c->Set("t", key, i); s.ok()) {
            Acked(sent);
            std::lock_guard lock(mu_);
            acked_sets_[key] = i;
          } else {
            Failed(s);
          }
        }
      });
    }
    for (int k = 0; k < kCounters; ++k) {
      for (int a = 0; a < kAddersPerCounter; ++a) {
        client::Client* c = clients_[kSetters + k * kAddersPerCounter + a].get();
        load_.emplace_back([this, c, k] {
          const std::string key = "c" + std::to_string(k);
          for (int i = 0; !stop_ && i < 100'000'000; ++i) {
            const int64_t sent = NowNs();
            ++attempted_adds_[k];
            if (auto r = c->Add("t", key, {}, 1); r.ok()) {
              Acked(sent);
              ++acked_adds_[k];
            } else {
              Failed(r.status());
            }
          }
        });
      }
    }
  }

  void StopLoad() {
    stop_ = true;
    for (std::thread& t : load_) t.join();
    load_.clear();
  }

  void Thaw() {
    for (int pid : frozen_) kill(pid, SIGCONT);
    frozen_.clear();
  }

  // The end of a freeze: the node thawed, the caller's checks on it, then
  // until enough writes sent after the thaw are acknowledged (the thawed
  // node must not stop the new primary taking writes).
  void Thawed(int n, const PgHaNode& old_primary, FailoverCycle* row, FailoverReport* report) {
    const std::string cycle = "cycle " + std::to_string(n) + ": ";
    // Asked while the old node is still stopped: the node that took the
    // writes during the freeze.
    Result<PgHaNode> now_primary = o_.after_thaw ? pg_.Primary() : Result<PgHaNode>(PgHaNode{});
    thaw_ns_ = NowNs();
    Thaw();
    if (!now_primary.ok()) {
      report->violations.push_back(
          cycle + "no primary after the freeze: " + now_primary.status().ToString());
    } else if (o_.after_thaw) {
      o_.after_thaw(old_primary, *now_primary);
    }
    const auto give_up = SteadyClock::now() + 90s;
    while (acked_after_thaw_ < o_.acked_after_outage && SteadyClock::now() < give_up) {
      std::this_thread::sleep_for(20ms);
    }
    row->acked_after_thaw = acked_after_thaw_;
    if (row->acked_after_thaw < o_.acked_after_outage) {
      report->violations.push_back(cycle + "writes not accepted after the thaw within 90 s");
    }
  }

  void Acked(int64_t sent_ns) {
    ++acked_;
    const int64_t thaw = thaw_ns_.load();
    if (thaw != 0 && sent_ns >= thaw) ++acked_after_thaw_;
    const int64_t fault = fault_ns_.load();
    if (fault == 0 || sent_ns < fault) return;
    std::lock_guard lock(mu_);
    acked_after_fault_ns_.push_back(NowNs());
  }
  void Failed(const Status& s) {
    ++failed_;
    if (s.code() == StatusCode::kOutcomeUnknown) ++outcome_unknown_;
    if (!IsStoreError(s)) {
      std::lock_guard lock(mu_);
      ++other_errors_[s.ToString()];
    }
    std::this_thread::sleep_for(5ms);  // pacing while the store is away, not a synchronisation
  }

  bool AwaitAcked(int64_t n, std::chrono::seconds limit) {
    const int64_t target = acked_ + n;
    const auto give_up = SteadyClock::now() + limit;
    while (acked_ < target && SteadyClock::now() < give_up) std::this_thread::sleep_for(10ms);
    return acked_ >= target;
  }

  // The longest stretch after the fault in which no write was
  // acknowledged: when it ended and how many were acknowledged since.
  struct Outage {
    int64_t end_ns = 0;
    int64_t acked_after = 0;
  };
  Outage OutageSoFar() {
    std::vector<int64_t> done;
    {
      std::lock_guard lock(mu_);
      done = acked_after_fault_ns_;
    }
    std::sort(done.begin(), done.end());
    Outage o;
    int64_t previous = fault_ns_, gap = 0;
    for (size_t i = 0; i < done.size(); ++i) {
      if (done[i] - previous > gap) {
        gap = done[i] - previous;
        o.end_ns = done[i];
        o.acked_after = static_cast<int64_t>(done.size() - i);
      }
      previous = done[i];
    }
    return o;
  }

  const FailoverOptions& o_;
  PgHa pg_;  // down last
  std::string url_;
  std::string secret_;
  SkiffdProcess skiffd_;
  std::vector<std::unique_ptr<client::Client>> clients_;
  std::vector<std::thread> load_;
  std::atomic<bool> stop_{false};
  std::vector<int> frozen_;

  std::mutex mu_;
  std::map<std::string, int> acked_sets_;      // guarded by mu_
  std::map<std::string, int> other_errors_;    // guarded by mu_
  std::vector<int64_t> acked_after_fault_ns_;  // guarded by mu_: when answered
  std::array<std::atomic<int64_t>, kCounters> acked_adds_{};
  std::array<std::atomic<int64_t>, kCounters> attempted_adds_{};
  std::atomic<int64_t> acked_{0}, failed_{0}, outcome_unknown_{0};
  std::atomic<int64_t> fault_ns_{0};
  std::atomic<int64_t> thaw_ns_{0};  // freeze: when thawed, 0 before
  std::atomic<int64_t> acked_after_thaw_{0};
};

}  // namespace

std::string FailoverReport::Summary() const {
  char buf[640];
  std::snprintf(buf, sizeof buf,
                "failover (%s, %s standby, %zu cycles): acknowledged sets %zu, lost %zu, stale "
                "reads %zu; counters acked/final/attempted %s (under acked %lld, over attempted "
                "%lld); failed requests %lld (outcome_unknown %lld)",
                kind.c_str(), synchronous ? "synchronous" : "asynchronous", cycles.size(),
                acked_sets, lost, stale_reads, counters.c_str(),
                static_cast<long long>(counters_below), static_cast<long long>(counters_above),
                static_cast<long long>(failed), static_cast<long long>(outcome_unknown));
  return buf;
}

std::string FailoverReport::CycleLine(size_t i) const {
  const FailoverCycle& c = cycles[i];
  char buf[768];
  std::snprintf(buf, sizeof buf,
                "cycle %zu, %s of %s: acknowledged %lld, failed %lld, outcome_unknown %lld; "
                "fault to %s (monitor) %s, to promoted (monitor) %s, to reported by the "
                "keeper %s; promoted to first acknowledged write through skiffd %s; fault to "
                "first acknowledged write %s",
                i + 1, c.kind.c_str(), c.old_primary.c_str(), static_cast<long long>(c.acked),
                static_cast<long long>(c.failed), static_cast<long long>(c.outcome_unknown),
                c.kind == "switchover" ? "promotion started" : "detected",
                Seconds(c.to_detected_s, c.to_detected_s >= 0).c_str(),
                Seconds(c.to_promoted_s, c.to_promoted_s >= 0).c_str(),
                Seconds(c.to_reported_s, c.to_reported_s >= 0).c_str(),
                Seconds(c.promoted_to_write_s(), c.timed()).c_str(),
                Seconds(c.to_first_write_s, c.to_first_write_s >= 0).c_str());
  std::string line = buf;
  if (c.kind == "freeze") {
    line += "; processes frozen " + std::to_string(c.frozen) +
            ", writes acknowledged after the thaw " + std::to_string(c.acked_after_thaw);
  }
  return line;
}

bool FailoverReport::Holds() const {
  const bool kept = !synchronous || (lost == 0 && counters_below == 0);
  return kept && stale_reads == 0 && counters_above == 0 && violations.empty() && acked_sets > 0;
}

Result<FailoverReport> RunFailover(const FailoverOptions& options) {
  if (options.kind != "kill" && options.kind != "freeze" && options.kind != "switchover") {
    return BadRequest("kind must be kill, freeze or switchover, not " + options.kind);
  }
  FailoverReport report;
  report.kind = options.kind;
  report.synchronous = options.synchronous;
  Run run(options);
  SKIFF_RETURN_IF_ERROR(run.Start());
  for (int i = 1; i <= options.cycles; ++i) {
    report.cycles.push_back(run.Cycle(i, i == options.cycles, &report));
    if (options.log) options.log(report.CycleLine(report.cycles.size() - 1));
  }
  SKIFF_RETURN_IF_ERROR(run.Check(&report));
  return report;
}

}  // namespace skiff::support
