// The connections family: what a real-time server is for, thousands of
// clients connected at once, measured the way the public "simple WebSocket
// echo benchmark" does (10,000 connections, each sending a message, reading
// it back, then sleeping 1 s, 100 ms, 10 ms or 1 ms before the next), beside
// the same shapes against a Bun.serve peer and a Node + ws peer (bench/peers/)
// driven by the same client in the same run. BM_Echo also runs against the
// floor peer (bench/peers/floor_echo.cc, server "floor"): one epoll thread
// answering each read with one write and no JSON parsing, the least a
// WebSocket server here can spend; every other server's echo row reports
// its rate, CPU per reply and worst latency as ratios to the floor's
// (rps_vs_floor, ...), skiffd's also to Bun's and Node's. The floor serves
// no TLS, so it has no -tls row, and it is not in the idle and accept-storm
// cases (it takes no 12 KB frame, and is a floor for the round trip only).
//
//   BM_IdleConnections  server memory per connection: open (handshake only),
//                       logged in, and after one 12 KB frame each
//   BM_Echo             echo with think time: rps, latency, server and
//                       client CPU, server memory; every reply checked
//   BM_AcceptStorm      N connections opened at once: time until all are
//                       open, and failures
//
// Each case also runs over TLS (wss://, servers "skiffd-tls", "bun-peer-tls",
// "node-peer-tls"): the same certificate chain and key for the three (made
// at start, support/test_certs.h), the same client speaking TLS through
// OpenSSL and verifying the chain and the name. An accept storm is then a
// handshake storm (every connection a full handshake, no resumption), and
// idle memory is per TLS connection; "skiffd-tls-buffers-kept" is skiffd's
// idle case with --tls-release-buffers=false, to show what releasing a
// quiet connection's record buffers saves.
//
// What is judged: BM_Echo's time is its fixed window, so it reports its
// replies as items and the comparer judges the time per reply; the other
// two are timed by their opening. Every case also reports the server's CPU
// per operation (a reply, or a connection for the other two) and its
// resident set, both judged (server_cpu_us_per_op, server_rss_mib), and
// counts the connections still open at its end and the SYNs the kernel
// dropped at a full listen queue while they were opened (listen_overflows:
// a dropped SYN is retried a second later, so a case where one was dropped
// fails rather than time the retry).
//
// The servers are set up alike: one I/O thread each (skiffd gets
// --io-threads 1; Bun and Node run one event loop), and the backlog each
// listening socket really got, read from the kernel, is in every case's
// label: skiffd listens with SOMAXCONN (4096) and the Node peer asks for the
// same, but Bun.serve takes no backlog and listens with 512. Only
// BM_AcceptStorm opens its connections all at once; the other cases open
// at most kSetUpAtOnce at a time, below every one of those backlogs, as
// their opening is not what they measure.
//
// Every server is a child process, so its resident set and CPU are its own
// and N connections fit the descriptor limit on each side; the client is one
// epoll thread (support/ws_fleet.h). Sizes: 1,000 connections in the quick
// profile, 1,000 and 10,000 otherwise.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <benchmark/benchmark.h>
#include <unistd.h>

#include "server/permissions.h"
#include "server/users.h"
#include "store/store.h"
#include "support/bench_options.h"
#include "support/bench_registry.h"
#include "support/counters.h"
#include "support/e2e_options.h"
#include "support/latency.h"
#include "support/listen_queue.h"
#include "support/process.h"
#include "support/skiffd_process.h"
#include "support/temp_dir.h"
#include "support/test_certs.h"
#include "support/ws_fleet.h"

namespace skiff::bench {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using std::chrono::seconds;
using SteadyClock = std::chrono::steady_clock;

// Connections connecting at once while a case that does not measure its
// opening sets up: below the smallest listen backlog compared (Bun's 512).
constexpr size_t kSetUpAtOnce = 256;

// The skiffd under test: the one built with the suite, or --skiffd=PATH
// (an older build, to compare in one run), with --skiffd-arg flags added.
std::string SkiffdBinary() {
  return GetE2eOptions().skiffd.empty() ? std::string(SKIFFD_PATH) : GetE2eOptions().skiffd;
}

// A server as the cases name it: which one, and over what.
struct Kind {
  std::string name;    // in the case's name: "bun-peer", "skiffd-tls", ...
  std::string server;  // "skiffd", "bun-peer", "node-peer" or "floor"
  bool tls = false;
  bool release_buffers = true;  // skiffd over TLS: --tls-release-buffers
  bool skiffd() const { return server == "skiffd"; }
};

// One chain and key for every TLS server of the run, made at first use.
const support::TestCertFiles& Certificates() {
  static const support::TempDir dir;
  static const support::TestCertFiles files = support::WriteTestCertificates(dir.path().string());
  return files;
}

double ThisProcessCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

// One server under test, as a child process.
class Target {
 public:
  // `storm`: the case opens every connection at once.
  static Result<std::unique_ptr<Target>> Start(const Kind& kind, bool storm) {
    auto t = std::unique_ptr<Target>(new Target());
    t->kind_ = kind;
    t->storm_ = storm;
    SKIFF_RETURN_IF_ERROR(kind.skiffd() ? t->StartSkiffd() : t->StartPeer());
    return t;
  }

  const Kind& kind() const { return kind_; }
  pid_t pid() const { return skiffd_ ? skiffd_->pid() : peer_.pid(); }
  uint16_t port() const { return port_; }
  double CpuSeconds() const { return support::CpuSecondsOf(pid()); }
  double ResidentMib() const { return double(support::ResidentBytes(pid())) / (1024.0 * 1024.0); }
  // What the label says of how the server was set up: its listen backlog
  // as the kernel has it, and its I/O threads.
  std::string SetUp() const {
    const std::optional<uint32_t> backlog = support::ListenBacklog(port_);
    std::string label = "backlog " + (backlog ? std::to_string(*backlog) : std::string("?")) +
                        ", " + io_threads_ + " I/O thread" + (io_threads_ == "1" ? "" : "s");
    if (kind_.tls) label += kind_.release_buffers ? ", TLS" : ", TLS, buffers kept";
    if (kind_.tls && storm_ && kind_.skiffd()) label += ", handshake timeout 120 s";
    return label;
  }
  // Makes `fleet` speak TLS to this server when it serves TLS; false (after
  // SkipWithError) when the client cannot be set up.
  bool SetUpFleet(benchmark::State& state, Fleet& fleet) const {
    if (!kind_.tls) return true;
    const Status tls = fleet.UseTls({Certificates().ca, "localhost"});
    if (!tls.ok()) state.SkipWithError(tls.ToString().c_str());
    return tls.ok();
  }
  std::string LoginFrame(uint64_t id) const {
    return R"({"id":)" + std::to_string(id) + R"(,"op":"login","user":"bench","secret":")" +
           secret_ + R"("})";
  }

 private:
  Target() = default;

  Status StartSkiffd() {
    const std::string url = "sqlite:" + dir_.File("connections.db");
    {
      Result<std::unique_ptr<store::Store>> store = store::OpenStore(url);
      if (!store.ok()) return store.status();
      Result<std::string> secret =
          server::CreateUser(**store, "bench", server::Permissions({"*"}, {"*"}));
      if (!secret.ok()) return secret.status();
      secret_ = *secret;
    }
    // One I/O thread, as each peer has one event loop; a --skiffd-arg may
    // ask for more (the label then says so).
    std::vector<std::string> flags = {"--store", url, "--io-threads", "1"};
    if (kind_.tls) {
      flags.insert(flags.end(), {"--tls-cert", Certificates().cert, "--tls-key", Certificates().key,
                                 std::string("--tls-release-buffers=") +
                                     (kind_.release_buffers ? "true" : "false")});
      // 10,000 handshakes at once queue for longer than skiffd's default
      // 10 s handshake deadline on two shared cores (the one client thread
      // verifies every chain): a storm gets the deadline Node's https
      // server has (120 s), so the storm measures handshakes, not the
      // deadline.
      if (storm_) flags.insert(flags.end(), {"--handshake-timeout-ms", "120000"});
    }
    for (const std::string& a : GetE2eOptions().skiffd_args) {
      if (flags.back() == "--io-threads") io_threads_ = a;
      if (a.rfind("--io-threads=", 0) == 0) io_threads_ = a.substr(a.find('=') + 1);
      flags.push_back(a);
    }
    skiffd_ = std::make_unique<support::SkiffdProcess>();
    SKIFF_RETURN_IF_ERROR(skiffd_->Start(SkiffdBinary(), flags));
    port_ = skiffd_->port();
    return Status::Ok();
  }

  Status StartPeer() {
    secret_ = "peer-secret";
    const std::string peers = std::string(SKIFF_SOURCE_DIR) + "/bench/peers/";
    std::vector<std::string> argv;
    if (kind_.server == "bun-peer") {
      argv = {BunPath(), "run", peers + "kv_peer.ts"};
    } else if (kind_.server == "floor") {
      argv = {FLOOR_ECHO_PATH};
    } else {
      argv = {"/usr/bin/node", peers + "kv_peer_node.mjs"};
    }
    std::vector<std::string> env = {"PORT=0", "SKIFF_PEER_SECRET=" + secret_};
    if (kind_.tls) {
      env.push_back("SKIFF_PEER_TLS_CERT=" + Certificates().cert);
      env.push_back("SKIFF_PEER_TLS_KEY=" + Certificates().key);
    }
    SKIFF_RETURN_IF_ERROR(peer_.Start(argv, env));
    Result<std::string> line = peer_.ReadLine(std::chrono::seconds(30));
    if (!line.ok()) return line.status();
    port_ = support::PortOfListeningLine(*line);
    if (port_ == 0) return Unavailable(kind_.name + " said '" + *line + "'");
    // A peer too old to know the TLS variables would serve plain ws://.
    if (kind_.tls && line->find("scheme=wss") == std::string::npos) {
      return Unavailable(kind_.name + " does not serve TLS: '" + *line + "'");
    }
    return Status::Ok();
  }

 public:
  // Where Bun is: --bun, else the copy bench/peers' npm install put there.
  static std::string BunPath() {
    if (!GetE2eOptions().bun.empty()) return GetE2eOptions().bun;
    return std::string(SKIFF_SOURCE_DIR) + "/bench/peers/node_modules/.bin/bun";
  }
  // Why a peer cannot run here, or empty.
  static std::string Missing(const Kind& kind) {
    if (kind.server == "bun-peer" && access(BunPath().c_str(), X_OK) != 0) {
      return "Bun not found at " + BunPath();
    }
    if (kind.server == "node-peer") {
      const std::string ws =
          std::string(SKIFF_SOURCE_DIR) + "/bench/peers/node_modules/ws/package.json";
      if (access("/usr/bin/node", X_OK) != 0) return "node not found at /usr/bin/node";
      if (access(ws.c_str(), R_OK) != 0) return "the ws package is not in bench/peers/node_modules";
    }
    if (kind.server == "floor" && access(FLOOR_ECHO_PATH, X_OK) != 0) {
      return std::string("the floor peer is not built at ") + FLOOR_ECHO_PATH;
    }
    return "";
  }

 private:
  Kind kind_;
  bool storm_ = false;
  support::TempDir dir_;
  std::unique_ptr<support::SkiffdProcess> skiffd_;
  support::Process peer_;
  uint16_t port_ = 0;
  std::string secret_;
  std::string io_threads_ = "1";
};

// Each peer before skiffd, for skiffd's ratios to them (SetRatios).
const std::vector<Kind>& Kinds() {
  static const std::vector<Kind> kinds = {
      {"bun-peer", "bun-peer"},
      {"node-peer", "node-peer"},
      {"skiffd", "skiffd"},
      {"bun-peer-tls", "bun-peer", true},
      {"node-peer-tls", "node-peer", true},
      {"skiffd-tls", "skiffd", true},
  };
  return kinds;
}
// The echo cases' servers: the floor first, for every other server's ratios
// to it.
const std::vector<Kind>& EchoKinds() {
  static const std::vector<Kind> kinds = [] {
    std::vector<Kind> all = {{"floor", "floor"}};
    all.insert(all.end(), Kinds().begin(), Kinds().end());
    return all;
  }();
  return kinds;
}
// skiffd over TLS keeping every connection's record buffers (idle memory
// only: what releasing them saves).
const Kind& BuffersKept() {
  static const Kind kind{"skiffd-tls-buffers-kept", "skiffd", true, false};
  return kind;
}

std::vector<size_t> Sizes() {
  if (Options().profile == Profile::kQuick) return {1000};
  return {1000, 10000};
}

bool CheckDescriptors(benchmark::State& state, size_t n) {
  const uint64_t limit = RaiseDescriptorLimit();
  if (limit < n + 256) {
    const std::string why = "needs " + std::to_string(n + 256) +
                            " descriptors in this process and in the server; the hard limit "
                            "here is " +
                            std::to_string(limit) + " (raise it with ulimit -Hn)";
    std::fprintf(stderr, "connections_bench: *** %s ***\n", why.c_str());
    state.SkipWithError(why.c_str());
    return false;
  }
  return true;
}

std::optional<std::unique_ptr<Target>> StartOrSkip(benchmark::State& state, const Kind& kind,
                                                   bool storm = false) {
  if (std::string missing = Target::Missing(kind); !missing.empty()) {
    std::fprintf(stderr, "connections_bench: *** %s: %s; skipped%s ***\n", kind.name.c_str(),
                 missing.c_str(),
                 kind.server == "floor" ? "" : " (npm ci --prefix bench/peers installs the peers)");
    state.SkipWithError(("skipped: " + missing).c_str());
    return std::nullopt;
  }
  Result<std::unique_ptr<Target>> target = Target::Start(kind, storm);
  if (!target.ok()) {
    state.SkipWithError(target.status().ToString().c_str());
    return std::nullopt;
  }
  return std::move(*target);
}

// The kernel's count of SYNs dropped at a full listen queue, read before
// and after the connections of a case are opened.
class ListenDropWatch {
 public:
  ListenDropWatch() : before_(support::ReadListenOverflows()) {}

  // Sets listen_overflows on `state`; false (after SkipWithError) when the
  // kernel dropped any, or its counters cannot be read.
  bool Check(benchmark::State& state, const Target& t) {
    const std::optional<support::ListenOverflowCounts> after = support::ReadListenOverflows();
    if (!before_ || !after) {
      state.SkipWithError("cannot read the listen-overflow counters of /proc/net/netstat");
      return false;
    }
    const uint64_t dropped = after->RiseSince(*before_);
    SetDeterministic(state, "listen_overflows", double(dropped));
    if (dropped == 0) return true;
    const std::string why = "the kernel dropped " + std::to_string(dropped) +
                            " connections at a full listen queue while they were opened "
                            "(TcpExt ListenOverflows/ListenDrops rose; " +
                            t.kind().name + ": " + t.SetUp() + ")";
    // Either way the case's figures would time SYN retransmits, not the
    // server, so none is reported. A drop at skiffd is a failure of
    // skiffd; a peer's (Bun listens with a backlog of 512 whatever it is
    // asked, Node accepts too slowly for 10,000 at once) is how that peer
    // is, so its case is skipped, saying why.
    const std::string message = t.kind().skiffd() ? why : "skipped: " + why;
    state.SkipWithError(message.c_str());
    return false;
  }

 private:
  std::optional<support::ListenOverflowCounts> before_;
};

bool OpenedAll(benchmark::State& state, const FleetOpenReport& opened, size_t n) {
  if (opened.opened == n) return true;
  state.SkipWithError(("opened " + std::to_string(opened.opened) + " of " + std::to_string(n) +
                       ": " + opened.first_error)
                          .c_str());
  return false;
}

// The judged figures of the server: its CPU per operation over a span, and
// its resident set now.
void SetServerFigures(benchmark::State& state, const Target& t, double cpu_seconds, double ops) {
  SetJudged(state, "server_cpu_us_per_op", cpu_seconds / ops * 1e6);
  SetJudged(state, "server_rss_mib", t.ResidentMib());
}

// ---- Idle memory -----------------------------------------------------------

// An operation is a connection served: opened, logged in, one 12 KB echo.
void BM_IdleConnections(benchmark::State& state, const Kind& kind, size_t n) {
  if (!CheckDescriptors(state, n)) return;
  for (auto _ : state) {
    auto target = StartOrSkip(state, kind);
    if (!target) return;
    Target& t = **target;
    state.SetLabel(t.SetUp());
    size_t replies = 0, bad = 0;
    std::string expected;
    Fleet fleet([&](size_t, std::string_view payload) {
      ++replies;
      if (!expected.empty() && payload != expected) ++bad;
    });
    if (!t.SetUpFleet(state, fleet)) return;
    const double rss_0 = t.ResidentMib();
    const double cpu_0 = t.CpuSeconds();
    ListenDropWatch drops;
    const auto start = SteadyClock::now();
    FleetOpenReport opened = fleet.Open(t.port(), n, seconds(120), kSetUpAtOnce);
    state.SetIterationTime(std::chrono::duration<double>(SteadyClock::now() - start).count());
    if (!drops.Check(state, t) || !OpenedAll(state, opened, n)) return;
    const double rss_open = t.ResidentMib();

    // Logged in: every connection a session.
    expected = R"({"id":1,"ok":true})";
    for (size_t i = 0; i < n; ++i) fleet.Send(i, t.LoginFrame(1));
    if (!fleet.RunUntil([&] { return replies >= n; }, seconds(120)) || bad > 0) {
      return state.SkipWithError("not every connection logged in");
    }
    const double rss_login = t.ResidentMib();

    // One 12 KB frame each, echoed back and checked.
    const std::string data(12 * 1024, 'm');
    const std::string frame = R"({"id":2,"op":"echo","data":")" + data + R"("})";
    expected = R"({"id":2,"ok":true,"data":")" + data + R"("})";
    replies = 0;
    for (size_t i = 0; i < n; ++i) fleet.Send(i, frame);
    if (!fleet.RunUntil([&] { return replies >= n; }, seconds(120)) || bad > 0) {
      return state.SkipWithError("not every 12 KB echo came back intact");
    }
    const double cpu = t.CpuSeconds() - cpu_0;
    const double rss_12kb = t.ResidentMib();
    if (fleet.lost() > 0) return state.SkipWithError("the server dropped connections");
    const double per = 1024.0 / double(n);  // MiB over n connections, in KiB each
    SetDeterministic(state, "connections", double(fleet.open()));
    SetServerFigures(state, t, cpu, double(n));
    SetInfo(state, "server_rss_mib_base", rss_0);
    SetInfo(state, "kib_per_connection_open", (rss_open - rss_0) * per);
    SetInfo(state, "kib_per_connection_logged_in", (rss_login - rss_0) * per);
    SetInfo(state, "kib_per_connection_after_12kb", (rss_12kb - rss_0) * per);
    fleet.CloseAll(seconds(30));
  }
}

// ---- Echo with think time --------------------------------------------------

struct EchoResult {
  double rps = 0;
  double server_cpu_us_per_reply = 0;
  double max_latency_ms = 0;
};
// Results of the peers' and the floor's cases, for the ratios on the cases
// of the same shape registered after them.
std::map<std::string, EchoResult>& PeerResults() {
  static std::map<std::string, EchoResult> results;
  return results;
}

nanoseconds Warmup() { return Options().profile == Profile::kQuick ? seconds(1) : seconds(2); }
nanoseconds Measured() { return ByProfile<nanoseconds>(seconds(3), seconds(10), seconds(30)); }

// A server's figures as ratios to others' of the same shape (info): every
// server's to the floor's (plain only: the floor serves no TLS), and
// skiffd's also to each peer's, over TLS to the peers over TLS.
void SetRatios(benchmark::State& state, const Kind& kind, const std::string& shape,
               const EchoResult& r) {
  if (!kind.skiffd()) PeerResults()[kind.name + "/" + shape] = r;
  std::vector<std::pair<std::string, std::string>> to;  // counter suffix, case
  if (kind.server != "floor" && !kind.tls) to.push_back({"floor", "floor/" + shape});
  if (kind.skiffd()) {
    for (const std::string p : {"bun", "node"}) {
      to.push_back({p, p + "-peer" + (kind.tls ? "-tls" : "") + "/" + shape});
    }
  }
  for (const auto& [p, name] : to) {
    auto it = PeerResults().find(name);
    if (it == PeerResults().end()) continue;
    SetInfo(state, "rps_vs_" + p, r.rps / it->second.rps);
    SetInfo(state, "cpu_per_reply_vs_" + p,
            r.server_cpu_us_per_reply / it->second.server_cpu_us_per_reply);
    SetInfo(state, "max_latency_vs_" + p, r.max_latency_ms / it->second.max_latency_ms);
  }
}

// The time is the measured window, the same whatever the speed; the replies
// are the items, so the comparer judges the time per reply.
void BM_Echo(benchmark::State& state, const Kind& kind, size_t n, int delay_ms) {
  if (!CheckDescriptors(state, n)) return;
  const std::string shape = std::to_string(n) + "/" + std::to_string(delay_ms);
  for (auto _ : state) {
    auto target = StartOrSkip(state, kind);
    if (!target) return;
    Target& t = **target;
    state.SetLabel(t.SetUp());
    // Each connection has one request out at a time; its id is a sequence
    // number, and the reply must be exactly the request's echo.
    const std::string data = "0123456789abcdef0123456789abcdef";
    std::vector<uint64_t> seq(n, 0);
    std::vector<SteadyClock::time_point> sent_at(n);
    bool measuring = false, stopping = false;
    uint64_t replies = 0, mismatches = 0;
    LatencyRecorder latency(4'000'000);
    Fleet* fleet_ptr = nullptr;
    auto send = [&](size_t i) {
      if (stopping) return;
      ++seq[i];
      sent_at[i] = SteadyClock::now();
      fleet_ptr->Send(
          i, R"({"id":)" + std::to_string(seq[i]) + R"(,"op":"echo","data":")" + data + R"("})");
    };
    Fleet fleet(
        [&](size_t i, std::string_view payload) {
          const auto now = SteadyClock::now();
          const std::string expected =
              R"({"id":)" + std::to_string(seq[i]) + R"(,"ok":true,"data":")" + data + R"("})";
          if (payload != expected) ++mismatches;
          if (measuring) {
            ++replies;
            latency.Record(now - sent_at[i]);
          }
          fleet_ptr->WakeAt(i, now + milliseconds(delay_ms));
        },
        send);
    fleet_ptr = &fleet;
    if (!t.SetUpFleet(state, fleet)) return;
    ListenDropWatch drops;
    FleetOpenReport opened = fleet.Open(t.port(), n, seconds(120), kSetUpAtOnce);
    if (!drops.Check(state, t) || !OpenedAll(state, opened, n)) return;
    // Spread the first requests evenly over one delay, as clients that
    // connected at different times would start.
    const auto t0 = SteadyClock::now();
    const int64_t delay_ns = int64_t{delay_ms} * 1'000'000;
    for (size_t i = 0; i < n; ++i) {
      fleet.WakeAt(i, t0 + nanoseconds(delay_ns * int64_t(i) / int64_t(n)));
    }
    fleet.RunFor(Warmup());
    measuring = true;
    const double server_cpu_0 = t.CpuSeconds(), client_cpu_0 = ThisProcessCpuSeconds();
    const auto start = SteadyClock::now();
    fleet.RunFor(Measured());
    const double elapsed = std::chrono::duration<double>(SteadyClock::now() - start).count();
    const double server_cpu = t.CpuSeconds() - server_cpu_0;
    const double client_cpu = ThisProcessCpuSeconds() - client_cpu_0;
    measuring = false;
    stopping = true;
    const size_t still_open = fleet.open();
    state.SetIterationTime(elapsed);
    if (mismatches > 0) return state.SkipWithError("a reply did not match its request");
    if (fleet.lost() > 0 || fleet.protocol_errors() > 0) {
      return state.SkipWithError("the server dropped connections or broke framing");
    }
    if (replies == 0) return state.SkipWithError("no reply arrived in the measured window");
    const LatencySummary lat = latency.Summarize();
    EchoResult r;
    r.rps = double(replies) / elapsed;
    r.server_cpu_us_per_reply = server_cpu / double(replies) * 1e6;
    r.max_latency_ms = lat.max_us / 1000.0;
    state.SetItemsProcessed(int64_t(replies));
    SetDeterministic(state, "connections", double(still_open));
    SetServerFigures(state, t, server_cpu, double(replies));
    SetInfo(state, "rps", r.rps);
    SetInfo(state, "avg_latency_ms", lat.avg_us / 1000.0);
    SetInfo(state, "p50_us", lat.p50_us);
    SetInfo(state, "p99_us", lat.p99_us);
    SetInfo(state, "max_latency_ms", r.max_latency_ms);
    SetInfo(state, "server_cores", server_cpu / elapsed);
    SetInfo(state, "client_cores", client_cpu / elapsed);
    SetRatios(state, kind, shape, r);
    // The reference page's own two lines.
    std::fprintf(stderr,
                 "%s %zu conns %d ms\nrps: %.2f avg/max latency = %.2fms/%.2fms elapsed %.1fs\n"
                 "%.0f MB %.1f core usage\n",
                 kind.name.c_str(), n, delay_ms, r.rps, lat.avg_us / 1000.0, r.max_latency_ms,
                 elapsed, t.ResidentMib(), server_cpu / elapsed);
    fleet.CloseAll(seconds(30));
  }
}

// ---- Accept storm ----------------------------------------------------------

// All connections at once; an operation is a connection opened.
void BM_AcceptStorm(benchmark::State& state, const Kind& kind, size_t n) {
  if (!CheckDescriptors(state, n)) return;
  for (auto _ : state) {
    auto target = StartOrSkip(state, kind, /*storm=*/true);
    if (!target) return;
    Target& t = **target;
    state.SetLabel(t.SetUp());
    Fleet fleet([](size_t, std::string_view) {});
    if (!t.SetUpFleet(state, fleet)) return;
    const double cpu_0 = t.CpuSeconds(), client_cpu_0 = ThisProcessCpuSeconds();
    ListenDropWatch drops;
    FleetOpenReport opened = fleet.Open(t.port(), n, seconds(120));
    state.SetIterationTime(std::chrono::duration<double>(opened.elapsed).count());
    const double cpu = t.CpuSeconds() - cpu_0;
    const double client_cpu = ThisProcessCpuSeconds() - client_cpu_0;
    const double elapsed_s = std::chrono::duration<double>(opened.elapsed).count();
    SetInfo(state, "failed", double(opened.failed));
    // Over TLS the client's handshakes cost as much as the server's: this
    // says how close the one client thread came to being what limited.
    SetInfo(state, "client_cores", client_cpu / elapsed_s);
    SetInfo(state, "server_cores", cpu / elapsed_s);
    SetInfo(state, "ms_until_all_open",
            std::chrono::duration<double, std::milli>(opened.elapsed).count());
    if (!drops.Check(state, t) || !OpenedAll(state, opened, n)) return;
    SetDeterministic(state, "connections", double(fleet.open()));
    SetServerFigures(state, t, cpu, double(opened.opened));
    fleet.CloseAll(seconds(30));
  }
}

const bool kRegistered = AddRegistration([] {
  auto once = [](benchmark::internal::Benchmark* b) {
    b->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);
  };
  for (size_t n : Sizes()) {
    std::vector<Kind> idle = Kinds();
    idle.push_back(BuffersKept());
    for (const Kind& kind : idle) {
      once(AddCase("BM_IdleConnections/" + kind.name + "/connections:" + std::to_string(n),
                   [kind, n](benchmark::State& s) { BM_IdleConnections(s, kind, n); }));
    }
  }
  for (size_t n : Sizes()) {
    for (int delay : {1000, 100, 10, 1}) {
      for (const Kind& kind : EchoKinds()) {
        once(AddCase("BM_Echo/" + kind.name + "/connections:" + std::to_string(n) +
                         "/delay_ms:" + std::to_string(delay),
                     [kind, n, delay](benchmark::State& s) { BM_Echo(s, kind, n, delay); }));
      }
    }
  }
  // Plain: the one size of the profile. TLS: a handshake storm at every
  // size, 1,000 being where the quick profile sees it.
  const size_t storm = Options().profile == Profile::kQuick ? 1000 : 10000;
  for (const Kind& kind : Kinds()) {
    for (size_t n : kind.tls ? Sizes() : std::vector<size_t>{storm}) {
      once(AddCase("BM_AcceptStorm/" + kind.name + "/connections:" + std::to_string(n),
                   [kind, n](benchmark::State& s) { BM_AcceptStorm(s, kind, n); }));
    }
  }
});

}  // namespace
}  // namespace skiff::bench
