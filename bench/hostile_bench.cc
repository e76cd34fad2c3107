// The hostile family: what a well-behaved client sees while other clients
// misbehave. Each case runs one skiffd (a child process, SQLite store) and a
// closed loop of `get`s of a 1 KB document on four logged-in connections,
// first alone, then beside one kind of hostile client (support/
// hostile_load.h), then alone again, and compares the loop's latency beside
// the hostile client with its latency alone (both alone windows together)
// in the same case:
//
//   BM_BesideHostile/never-reads            8 connections sending 20 KB echoes
//                                           and never reading a reply
//   BM_BesideHostile/slow-frames            256 connections each trickling an
//                                           8 MiB frame that never ends
//   BM_BesideHostile/unfinished-handshakes  1,000 half-sent upgrade requests
//   BM_BesideHostile/idle-connections:N     N idle WebSockets (1,000 in the
//                                           quick profile, 10,000 otherwise)
//
// The case's time is the window beside the hostile client, and its items
// the gets answered in it, so the comparer judges the time per get beside
// it; the server's CPU per get and its peak resident set beside it are
// judged too (server_cpu_us_per_op, server_rss_mib). Shown: p50/p99 of the
// loop alone and beside, their ratios (the goal is a p99 under 10x its
// baseline), and the peak buffered bytes (from the server's `stats`,
// sampled every 100 ms on a fifth connection) against the budget it was
// given. Counted: the hostile connections open at the end of the window and
// those held open through it, the loop's connections still open, and the
// connections the kernel dropped at the server's full listen queue while
// the hostile ones were opened (listen_overflows, always 0).
//
// A case fails when a reply is wrong, a well-behaved connection is dropped,
// a window got no reply at all (a frozen server), the buffered bytes passed
// the budget by more than the one read each connection may take past it, a
// SYN was dropped, or the hostile connections did not stay open as the
// design says: each is held through the window unless the window outlasts
// the server's limit for its kind (the handshake, frame or send timeout),
// and then the server must have ended every one. Latency counts only
// requests sent and answered inside one window, so the pauses between
// windows are in no figure.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "doc/document.h"
#include "server/permissions.h"
#include "server/server_options.h"
#include "server/users.h"
#include "store/store.h"
#include "support/bench_options.h"
#include "support/bench_registry.h"
#include "support/counters.h"
#include "support/e2e_options.h"
#include "support/hostile_load.h"
#include "support/latency.h"
#include "support/listen_queue.h"
#include "support/process.h"
#include "support/skiffd_process.h"
#include "support/temp_dir.h"
#include "support/ws_fleet.h"

namespace skiff::bench {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using std::chrono::seconds;
using SteadyClock = std::chrono::steady_clock;

constexpr size_t kLoopConnections = 4;
constexpr size_t kObserver = kLoopConnections;  // the connection that reads stats
constexpr size_t kBudgetBytes = size_t{32} << 20;
// What one connection may take past the budget: a connection that holds no
// buffers is still read (one read of the server's 64 KiB buffer), and a
// reply already made is still queued.
constexpr size_t kSlackPerConnection = 128 * 1024;

struct HostileShape {
  HostileKind kind;
  size_t connections;
};

std::vector<HostileShape> Shapes() {
  const size_t idle = Options().profile == Profile::kQuick ? 1000 : 10000;
  return {{HostileKind::kNeverReads, 8},
          {HostileKind::kSlowFrames, 256},
          {HostileKind::kUnfinishedHandshakes, 1000},
          {HostileKind::kIdleConnections, idle}};
}

nanoseconds Window() { return ByProfile<nanoseconds>(seconds(2), seconds(5), seconds(15)); }

// How long skiffd lets a connection of this kind be before it ends it (its
// defaults; a --skiffd-arg that changes them changes what is expected).
nanoseconds ServerLimit(HostileKind kind) {
  const server::ServerOptions defaults;
  switch (kind) {
    case HostileKind::kNeverReads:
      return defaults.send_timeout;
    case HostileKind::kSlowFrames:
      return defaults.frame_timeout;
    case HostileKind::kUnfinishedHandshakes:
      return defaults.handshake_timeout;
    case HostileKind::kIdleConnections:
      return defaults.idle_timeout;
  }
  return defaults.idle_timeout;
}

// Whether the hostile connections did what the design says over the
// window: `opening` is how long the load took to be in place, `held_for`
// from then to the end of the window. Empty when they did.
std::string CheckHostileHeld(HostileKind kind, size_t n, const HostileCounters& c,
                             nanoseconds opening, nanoseconds held_for) {
  constexpr nanoseconds kMargin = seconds(1);
  const nanoseconds limit = ServerLimit(kind);
  const std::string of_n =
      " of " + std::to_string(n) + " " + std::string(HostileName(kind)) + " connections";
  const std::string limit_s = std::to_string(limit.count() / 1'000'000'000) + " s";
  if (c.open != n) return "only " + std::to_string(c.open) + of_n + " were open at the end";
  if (opening + held_for + kMargin < limit) {
    if (c.held == n) return "";
    return "the server ended " + std::to_string(n - c.held) + of_n +
           " inside the window, before its " + limit_s + " limit";
  }
  if (held_for > limit + kMargin) {
    if (c.ended_since_in_place >= n) return "";
    return "the server ended only " + std::to_string(c.ended_since_in_place) + of_n +
           " though the window outlasted its " + limit_s + " limit";
  }
  // The limit falls inside the window's margins: each either way.
  if (c.held + c.ended_since_in_place >= n) return "";
  return "only " + std::to_string(c.held) + of_n + " were held open and " +
         std::to_string(c.ended_since_in_place) + " ended by the server";
}

std::string SkiffdBinary() {
  return GetE2eOptions().skiffd.empty() ? std::string(SKIFFD_PATH) : GetE2eOptions().skiffd;
}

// A skiffd on a fresh SQLite file with one user who may read and write.
struct Server {
  support::TempDir dir;
  support::SkiffdProcess process;
  std::string secret;

  Status Start() {
    const std::string url = "sqlite:" + dir.File("hostile.db");
    {
      SKIFF_ASSIGN_OR_RETURN(std::unique_ptr<store::Store> store, store::OpenStore(url));
      SKIFF_ASSIGN_OR_RETURN(
          secret, server::CreateUser(*store, "bench", server::Permissions({"*"}, {"*"})));
    }
    std::vector<std::string> flags = {"--store", url, "--max-buffered-bytes",
                                      std::to_string(kBudgetBytes)};
    for (const std::string& a : GetE2eOptions().skiffd_args) flags.push_back(a);
    return process.Start(SkiffdBinary(), flags);
  }
};

// What happened in one window of the loop.
struct WindowFigures {
  LatencyRecorder latency{2'000'000};
  uint64_t gets = 0;
  double seconds = 0;
  double server_cpu = 0;
};

// kAlone is the first alone window, kAfter the second: the server's peaks
// alone are taken before any hostile client came (memory it kept after one
// left is in neither).
enum class Phase { kSetUp, kAlone, kBeside, kBetween, kAfter };

// The well-behaved side: the get loop and the observer on one fleet, driven
// by this thread.
class GoodClients {
 public:
  explicit GoodClients(const Server& server)
      : server_(server),
        fleet_([this](size_t i, std::string_view p) { OnReply(i, p); },
               [this](size_t i) { OnWake(i); }) {}

  // Opens, logs in, writes the document and takes each connection's
  // reference reply; an error says what failed.
  Status Prepare() {
    const FleetOpenReport opened =
        fleet_.Open(server_.process.port(), kLoopConnections + 1, milliseconds(30000));
    if (opened.opened != kLoopConnections + 1) return Unavailable(opened.first_error);
    for (size_t i = 0; i <= kLoopConnections; ++i) {
      fleet_.Send(i,
                  R"({"id":0,"op":"login","user":"bench","secret":")" + server_.secret + R"("})");
    }
    if (!AwaitReplies(kLoopConnections + 1)) return Unavailable("login got no answer");
    for (const std::string& r : setup_) {
      if (r.find(R"("ok":true)") == std::string::npos) return Unavailable("login refused: " + r);
    }
    const std::string value = R"({"name":"well-behaved","data":")" + std::string(1000, 'd') + "\"}";
    fleet_.Send(0, R"({"id":0,"op":"set","table":"t","key":"doc","value":)" + value + "}");
    if (!AwaitReplies(1) || setup_[0].find(R"("ok":true)") == std::string::npos) {
      return Unavailable("set failed: " + setup_[0]);
    }
    for (size_t i = 0; i < kLoopConnections; ++i) fleet_.Send(i, GetFrame(i));
    if (!AwaitReplies(kLoopConnections)) return Unavailable("get got no answer");
    reference_ = setup_;
    for (size_t i = 0; i < kLoopConnections; ++i) {
      const doc::Value r = doc::Value::parse(reference_[i], nullptr, false);
      if (r.is_discarded() || r["value"] != doc::Value::parse(value)) {
        return Unavailable("get did not return the document: " + reference_[i]);
      }
    }
    looping_ = true;
    for (size_t i = 0; i < kLoopConnections; ++i) SendGet(i);
    fleet_.WakeAt(kObserver, SteadyClock::now());
    return Status::Ok();
  }

  // Runs the loop for `d`, recording into `into` (nullptr: recorded nowhere).
  void Run(nanoseconds d, WindowFigures* into) {
    window_ = into;
    ++window_number_;
    const double cpu0 = support::CpuSecondsOf(server_.process.pid());
    const auto start = SteadyClock::now();
    fleet_.RunFor(d);
    if (into) {
      into->seconds += std::chrono::duration<double>(SteadyClock::now() - start).count();
      into->server_cpu += support::CpuSecondsOf(server_.process.pid()) - cpu0;
    }
    window_ = nullptr;
  }

  void Stop() {
    looping_ = false;
    fleet_.CloseAll(milliseconds(10000));
  }

  uint64_t mismatches() const { return mismatches_; }
  // The loop's connections open now.
  size_t loop_open() const {
    size_t n = 0;
    for (size_t i = 0; i < kLoopConnections; ++i) n += fleet_.is_open(i) ? 1 : 0;
    return n;
  }
  uint64_t lost() const { return fleet_.lost() + fleet_.protocol_errors(); }
  uint64_t peak_buffered(Phase p) const {
    return p == Phase::kBeside ? beside_buffered_ : alone_buffered_;
  }
  double peak_rss_mb(Phase p) const { return p == Phase::kBeside ? beside_rss_ : alone_rss_; }
  void set_phase(Phase p) { phase_ = p; }

 private:
  static std::string GetFrame(size_t i) {
    return R"({"id":)" + std::to_string(i + 1) + R"(,"op":"get","table":"t","key":"doc"})";
  }

  // Waits for one reply on each of the first `n` connections; setup_[i]
  // holds connection i's.
  bool AwaitReplies(size_t n) {
    setup_.assign(n, std::string());
    answered_ = 0;
    return fleet_.RunUntil([&] { return answered_ >= n; }, seconds(30));
  }

  void SendGet(size_t i) {
    if (!looping_) return;
    sent_at_[i] = SteadyClock::now();
    sent_in_[i] = window_number_;
    fleet_.Send(i, GetFrame(i));
  }

  void OnReply(size_t i, std::string_view payload) {
    if (!looping_) {
      if (i < setup_.size() && setup_[i].empty()) {
        setup_[i] = payload;
        ++answered_;
      }
      return;
    }
    if (i == kObserver) return OnStats(payload);
    const auto now = SteadyClock::now();
    if (payload != reference_[i]) ++mismatches_;
    // Only a request sent in this window counts: one sent before a pause
    // between windows would carry the pause.
    if (window_ && sent_in_[i] == window_number_) {
      window_->latency.Record(now - sent_at_[i]);
      ++window_->gets;
    }
    SendGet(i);
  }

  void OnWake(size_t i) {
    if (i == kObserver && looping_) fleet_.Send(kObserver, R"({"id":9,"op":"stats"})");
  }

  void OnStats(std::string_view payload) {
    const doc::Value s = doc::Value::parse(payload, nullptr, false);
    if (s.is_discarded() || !s.contains("network") ||
        !s["network"].contains("buffered_input_bytes")) {
      ++mismatches_;
    } else {
      const doc::Value& n = s["network"];
      const uint64_t buffered =
          n["buffered_input_bytes"].get<uint64_t>() + n["buffered_output_bytes"].get<uint64_t>();
      const double rss = double(support::ResidentBytes(server_.process.pid())) / (1024.0 * 1024.0);
      if (phase_ == Phase::kAlone || phase_ == Phase::kBeside) {
        uint64_t& peak = phase_ == Phase::kBeside ? beside_buffered_ : alone_buffered_;
        double& rss_peak = phase_ == Phase::kBeside ? beside_rss_ : alone_rss_;
        peak = std::max(peak, buffered);
        rss_peak = std::max(rss_peak, rss);
      }
    }
    fleet_.WakeAt(kObserver, SteadyClock::now() + milliseconds(100));
  }

  const Server& server_;
  Fleet fleet_;
  bool looping_ = false;
  size_t answered_ = 0;
  std::vector<std::string> setup_;
  std::vector<std::string> reference_;
  SteadyClock::time_point sent_at_[kLoopConnections];
  uint64_t sent_in_[kLoopConnections] = {};
  uint64_t window_number_ = 0;
  WindowFigures* window_ = nullptr;
  Phase phase_ = Phase::kSetUp;
  uint64_t mismatches_ = 0;
  uint64_t alone_buffered_ = 0, beside_buffered_ = 0;
  double alone_rss_ = 0, beside_rss_ = 0;
};

// Everything one case measured, for its counters and its verdict.
struct CaseFigures {
  WindowFigures alone, beside;
  HostileCounters hostile;    // at the end of the window beside it
  nanoseconds opening{0};     // until the hostile load was in place
  nanoseconds held_for{0};    // from then to the end of the window
  uint64_t listen_drops = 0;  // SYNs dropped while the load was opened
  size_t loop_open = 0;       // loop connections open at the end
  uint64_t peak_buffered = 0;
  double rss_beside_mib = 0, rss_alone_mib = 0;
};

void SetCounters(benchmark::State& state, const HostileShape& shape, const CaseFigures& f) {
  const LatencySummary a = f.alone.latency.Summarize(), b = f.beside.latency.Summarize();
  state.SetItemsProcessed(int64_t(f.beside.gets));
  SetJudged(state, "server_cpu_us_per_op", f.beside.server_cpu / double(f.beside.gets) * 1e6);
  SetJudged(state, "server_rss_mib", f.rss_beside_mib);
  SetDeterministic(state, "hostile_connections", double(f.hostile.open));
  SetDeterministic(state, "hostile_held_open", double(f.hostile.held));
  SetDeterministic(state, "loop_connections", double(f.loop_open));
  SetDeterministic(state, "listen_overflows", double(f.listen_drops));
  SetInfo(state, "p50_us", b.p50_us);
  SetInfo(state, "p99_us", b.p99_us);
  SetInfo(state, "alone_p50_us", a.p50_us);
  SetInfo(state, "alone_p99_us", a.p99_us);
  SetInfo(state, "p50_ratio", b.p50_us / a.p50_us);
  SetInfo(state, "p99_ratio", b.p99_us / a.p99_us);
  SetInfo(state, "gets_per_s", double(f.beside.gets) / f.beside.seconds);
  SetInfo(state, "alone_gets_per_s", double(f.alone.gets) / f.alone.seconds);
  SetInfo(state, "alone_server_cpu_us_per_op", f.alone.server_cpu / double(f.alone.gets) * 1e6);
  SetInfo(state, "alone_server_rss_mib", f.rss_alone_mib);
  SetInfo(state, "buffered_mb", double(f.peak_buffered) / (1024.0 * 1024.0));
  SetInfo(state, "budget_mb", double(kBudgetBytes) / (1024.0 * 1024.0));
  SetInfo(state, "hostile_mb_sent", double(f.hostile.bytes_sent) / (1024.0 * 1024.0));
  SetInfo(state, "hostile_reopened", double(f.hostile.reopened));
  SetInfo(state, "hostile_ended_by_server", double(f.hostile.ended_since_in_place));
  std::fprintf(stderr,
               "hostile_bench: beside %s x%zu: p99 %.0f us (alone %.0f us, %.1fx; goal < 10x), "
               "server %.0f MB, buffered %.1f of %.0f MB; hostile open %zu, held %zu, ended %llu\n",
               std::string(HostileName(shape.kind)).c_str(), shape.connections, b.p99_us, a.p99_us,
               b.p99_us / a.p99_us, f.rss_beside_mib, double(f.peak_buffered) / (1024.0 * 1024.0),
               double(kBudgetBytes) / (1024.0 * 1024.0), f.hostile.open, f.hostile.held,
               static_cast<unsigned long long>(f.hostile.ended_since_in_place));
}

// Why the case failed after its counters were set, or empty.
std::string Verdict(const HostileShape& shape, const CaseFigures& f) {
  if (f.listen_drops > 0) {
    return "the kernel dropped " + std::to_string(f.listen_drops) +
           " connections at a full listen queue while the hostile ones were opened "
           "(TcpExt ListenOverflows/ListenDrops rose)";
  }
  if (f.loop_open != kLoopConnections) return "a well-behaved connection was not open at the end";
  if (std::string why =
          CheckHostileHeld(shape.kind, shape.connections, f.hostile, f.opening, f.held_for);
      !why.empty()) {
    return why;
  }
  const uint64_t bound =
      kBudgetBytes + (shape.connections + kLoopConnections + 1) * kSlackPerConnection;
  if (f.peak_buffered > bound) {
    return "the server buffered " + std::to_string(f.peak_buffered) + " bytes beside " +
           std::string(HostileName(shape.kind)) + ", past its budget and slack (" +
           std::to_string(bound) + ")";
  }
  return "";
}

void BM_BesideHostile(benchmark::State& state, HostileShape shape) {
  const uint64_t limit = RaiseDescriptorLimit();
  if (limit < shape.connections + 256) {
    const std::string why = "needs " + std::to_string(shape.connections + 256) +
                            " descriptors; the hard limit here is " + std::to_string(limit) +
                            " (raise it with ulimit -Hn)";
    std::fprintf(stderr, "hostile_bench: *** %s ***\n", why.c_str());
    return state.SkipWithError(why.c_str());
  }
  const std::string name(HostileName(shape.kind));
  for (auto _ : state) {
    Server server;
    if (Status s = server.Start(); !s.ok()) return state.SkipWithError(s.ToString().c_str());
    GoodClients good(server);
    if (Status s = good.Prepare(); !s.ok()) return state.SkipWithError(s.ToString().c_str());
    CaseFigures f;
    good.Run(Window() / 2, nullptr);  // warm-up
    good.set_phase(Phase::kAlone);
    good.Run(Window(), &f.alone);
    good.set_phase(Phase::kBetween);
    HostileLoad load(shape.kind, server.process.port(), shape.connections);
    const std::optional<support::ListenOverflowCounts> kernel_0 = support::ReadListenOverflows();
    const auto opening_0 = SteadyClock::now();
    if (Status s = load.Start(milliseconds(120000)); !s.ok()) {
      return state.SkipWithError(s.ToString().c_str());
    }
    const auto in_place = SteadyClock::now();
    const std::optional<support::ListenOverflowCounts> kernel_1 = support::ReadListenOverflows();
    good.set_phase(Phase::kBeside);
    good.Run(Window(), &f.beside);
    f.hostile = load.counters();
    f.held_for = SteadyClock::now() - in_place;
    f.opening = in_place - opening_0;
    good.set_phase(Phase::kBetween);
    load.Stop();
    good.set_phase(Phase::kAfter);
    good.Run(Window(), &f.alone);
    f.loop_open = good.loop_open();
    good.Stop();
    state.SetIterationTime(f.beside.seconds);

    if (good.mismatches() > 0) return state.SkipWithError("a reply did not match its request");
    if (good.lost() > 0) return state.SkipWithError("a well-behaved connection was dropped");
    if (f.alone.gets == 0 || f.beside.gets == 0) {
      return state.SkipWithError(
          ("no get was answered " + std::string(f.beside.gets == 0 ? "beside " + name : "alone"))
              .c_str());
    }
    if (!kernel_0 || !kernel_1) return state.SkipWithError("cannot read /proc/net/netstat");
    f.listen_drops = kernel_1->RiseSince(*kernel_0);
    f.peak_buffered = good.peak_buffered(Phase::kBeside);
    f.rss_beside_mib = good.peak_rss_mb(Phase::kBeside);
    f.rss_alone_mib = good.peak_rss_mb(Phase::kAlone);
    SetCounters(state, shape, f);
    if (std::string why = Verdict(shape, f); !why.empty()) return state.SkipWithError(why.c_str());
  }
}

const bool kRegistered = AddRegistration([] {
  for (const HostileShape& shape : Shapes()) {
    std::string name = "BM_BesideHostile/" + std::string(HostileName(shape.kind));
    if (shape.kind == HostileKind::kIdleConnections) {
      name += ":" + std::to_string(shape.connections);
    }
    AddCase(name, [shape](benchmark::State& s) { BM_BesideHostile(s, shape); })
        ->UseManualTime()
        ->Iterations(1)
        ->Unit(benchmark::kMillisecond);
  }
});

}  // namespace
}  // namespace skiff::bench
