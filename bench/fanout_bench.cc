// The fan-out family: one write reaching many watchers, skiffd's `watch`
// (docs/protocol.md, "watch / unwatch") beside four pub/sub servers driven
// by the same client in the same run: a Bun.serve peer (ws.subscribe /
// server.publish), a Node + ws peer (a send per subscriber), Redis
// SUBSCRIBE / PUBLISH and NATS (support/fanout_servers.h).
//
//   BM_FanOut/one_key/w:N/<server>            N watchers of one key, one
//                                             write at a time: the next
//                                             once every watcher has it
//   BM_FanOut/one_key_rate/w:N/r:R/<server>   the same watchers, R writes
//                                             per second for a fixed window
//   BM_FanOut/keys/k:K/w:N/<server>           K keys, N/K watchers each,
//                                             writes spread over the keys
//   BM_FanOut/prefix/p:P/w:N/<server>         P prefixes of 100 keys each,
//                                             N/P watchers of each prefix,
//                                             writes spread over every key
//   BM_FanOut/slow_watcher/w:N/skiffd         N watchers of one key, 1 KB
//                                             values at a steady rate,
//                                             without, beside and again
//                                             without one watcher that
//                                             never reads (BM_SlowWatcher)
//
// Each server is a child process with one I/O thread or event loop; the
// watchers and the writer are connections of this process, on one epoll
// thread (support/ws_fleet.h, support/fanout_tcp_fleet.h). Every delivery
// is checked: its payload must be the value written to its key (which
// names the key and its sequence number), each watcher's sequence per key
// must go up by one, and skiffd's versions must increase per connection.
// A lost, out-of-order or wrong delivery fails the case.
//
// Latency is from the moment the writer read its acknowledgement to the
// moment a watcher's delivery was read, both on this process's monotonic
// clock. The server may send a delivery before the acknowledgement, and
// the one loop may read it first: such a delivery counts as 0 (and is
// counted, deliveries_before_ack). Servers differ in what they do first
// (Node and Redis send every delivery before the acknowledgement), so the
// latency from the write's send is reported too, the same for all.
//
// Judged: the case's time per delivery (its items are the deliveries of
// the measured part), the server's CPU per delivery (server_cpu_us_per_op)
// and its resident set with every watch open (server_rss_mib). Counted
// (deterministic): watchers still open, lost and out-of-order deliveries.
// Info: latency percentiles, deliveries per second, bytes per watch (RSS
// with N watchers watching, minus RSS with the same N connections logged
// in, over N).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <benchmark/benchmark.h>

#include "support/bench_options.h"
#include "support/bench_registry.h"
#include "support/counters.h"
#include "support/e2e_options.h"
#include "support/fanout_client.h"
#include "support/fanout_servers.h"
#include "support/fanout_wire.h"
#include "support/latency.h"
#include "support/process.h"
#include "support/ws_fleet.h"

namespace skiff::bench {
namespace {

using std::chrono::nanoseconds;
using std::chrono::seconds;
using SteadyClock = std::chrono::steady_clock;  // CLOCK_MONOTONIC

// Deliveries per second the steady-rate cases ask for: the write rate is
// this over the watchers one write reaches (100 writes/s to 1,000
// watchers), so a case at 10,000 watchers asks the same of the machine.
constexpr double kDeliveriesPerSecond = 100'000;
constexpr size_t kKeysPerPrefix = 100;

// One case's shape.
struct Shape {
  std::string kind;  // one_key, one_key_rate, keys, prefix
  size_t watchers = 0;
  size_t topics = 1;          // keys watched, or prefixes
  size_t keys_per_topic = 1;  // 1 for a key watch
  bool rate = false;          // a steady rate, else one write at a time
  size_t pad_bytes = 32;      // of each value's padding

  bool prefix() const { return kind == "prefix"; }
  size_t keys() const { return topics * keys_per_topic; }
  size_t per_write() const { return watchers / topics; }
  double writes_per_s() const { return kDeliveriesPerSecond / double(per_write()); }
  std::string Name() const {
    const std::string w = "w:" + std::to_string(watchers);
    if (kind == "one_key" || kind == "slow_watcher") return kind + "/" + w;
    if (kind == "one_key_rate") {
      return kind + "/" + w + "/r:" + std::to_string(int64_t(writes_per_s()));
    }
    return kind + (prefix() ? "/p:" : "/k:") + std::to_string(topics) + "/" + w;
  }
};

std::vector<Shape> Shapes() {
  const bool quick = Options().profile == Profile::kQuick;
  std::vector<Shape> shapes;
  for (size_t n : quick ? std::vector<size_t>{1000} : std::vector<size_t>{1000, 10000}) {
    shapes.push_back({"one_key", n});
    shapes.push_back({"one_key_rate", n, 1, 1, true});
  }
  // 100 keys x 100 watchers (10 x 100 in the quick profile); prefixes the
  // same, each over 100 keys.
  for (size_t topics : quick ? std::vector<size_t>{10} : std::vector<size_t>{10, 100}) {
    shapes.push_back({"keys", topics * 100, topics, 1, true});
    shapes.push_back({"prefix", topics * 100, topics, kKeysPerPrefix, true});
  }
  return shapes;
}

size_t WritesOneAtATime(const Shape& s) {
  return s.watchers >= 10000 ? ByProfile<size_t>(30, 50, 100) : ByProfile<size_t>(100, 200, 500);
}
nanoseconds Warmup() {
  return ByProfile<nanoseconds>(std::chrono::milliseconds(500), seconds(1), seconds(2));
}
nanoseconds Window() { return ByProfile<nanoseconds>(seconds(2), seconds(5), seconds(10)); }
constexpr auto kSetUpTimeout = std::chrono::seconds(120);
constexpr auto kDrainTimeout = std::chrono::seconds(60);

FanoutPaths Paths() {
  FanoutPaths p;
  const E2eOptions& e2e = GetE2eOptions();
  p.skiffd = e2e.skiffd.empty() ? std::string(SKIFFD_PATH) : e2e.skiffd;
  p.skiffd_args = e2e.skiffd_args;
  p.sources = SKIFF_SOURCE_DIR;
  p.bun = e2e.bun.empty() ? p.sources + "/bench/peers/node_modules/.bin/bun" : e2e.bun;
  return p;
}

double ThisProcessCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

struct TransparentHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

// The writes of a case and the check of every delivery. Write w goes to
// topic w % topics, its key (w / topics) % keys_per_topic there, and is
// that key's write number n = w / keys + 1; its value names the key and n.
class Ledger {
 public:
  explicit Ledger(const Shape& shape) : shape_(shape) {
    for (size_t i = 0; i < shape.pad_bytes; ++i) pad_ += "0123456789abcdef"[i % 16];
    for (size_t t = 0; t < shape.topics; ++t) {
      for (size_t j = 0; j < shape.keys_per_topic; ++j) {
        index_.emplace(KeyName(t, j), uint32_t(t * shape.keys_per_topic + j));
      }
    }
    last_.assign(shape.watchers * shape.keys_per_topic, 0);
    last_version_.assign(shape.watchers, 0);
  }

  std::string KeyName(size_t topic, size_t j) const {
    if (shape_.prefix()) return TopicName(topic) + "k" + std::to_string(j);
    return "k" + std::to_string(topic);
  }
  std::string TopicName(size_t topic) const {
    return shape_.prefix() ? "g" + std::to_string(topic) + "/" : KeyName(topic, 0);
  }
  std::vector<FanoutTopic> Topics() const {
    std::vector<FanoutTopic> topics;
    for (size_t i = 0; i < shape_.watchers; ++i) {
      topics.push_back({TopicName(i % shape_.topics), shape_.prefix()});
    }
    return topics;
  }

  // Sends the next write through `client`.
  void Write(FanoutClient& client) {
    const uint64_t w = writes();
    const size_t topic = w % shape_.topics;
    const size_t j = (w / shape_.topics) % shape_.keys_per_topic;
    const std::string key = KeyName(topic, j);
    ValueText(key, w / shape_.keys() + 1, &scratch_);
    ack_at_.push_back(SteadyClock::time_point{});
    delivered_.push_back(0);
    sent_at_.push_back(SteadyClock::now());
    client.Publish(w, key, scratch_);
  }
  void Ack(uint64_t w) {
    if (w >= ack_at_.size() || ack_at_[w] != SteadyClock::time_point{}) {
      ++bad_acks_;
      return;
    }
    ack_at_[w] = SteadyClock::now();
    ++acked_;
  }

  void Deliver(const FanoutDelivery& d) {
    const auto now = SteadyClock::now();
    auto it = index_.find(d.key);
    uint64_t n = 0;
    if (d.watcher >= shape_.watchers || it == index_.end() ||
        !ParseNumber(d.value, R"("n":)", &n)) {
      ++bad_;
      return;
    }
    const size_t topic = it->second / shape_.keys_per_topic;
    const size_t j = it->second % shape_.keys_per_topic;
    ValueText(d.key, n, &scratch_);
    if (topic != d.watcher % shape_.topics || d.value != scratch_ || n == 0) {
      ++bad_;
      return;
    }
    if (d.coalesced) ++coalesced_;
    if (d.version != 0) {
      if (d.version <= last_version_[d.watcher]) ++out_of_order_;
      last_version_[d.watcher] = d.version;
    }
    uint32_t& last = last_[d.watcher * shape_.keys_per_topic + j];
    if (n <= last) {
      ++out_of_order_;
      return;
    }
    last = uint32_t(n);
    ++ok_;
    const uint64_t w = (n - 1) * shape_.keys() + j * shape_.topics + topic;
    if (w >= delivered_.size()) {
      ++bad_;  // a value never written
      return;
    }
    ++delivered_[w];
    if (w < measured_from_) return;
    ++measured_;
    from_send_.Record(now - sent_at_[w]);
    if (ack_at_[w] == SteadyClock::time_point{} || now < ack_at_[w]) {
      ++before_ack_;
      latency_.Record(nanoseconds(0));
    } else {
      latency_.Record(now - ack_at_[w]);
    }
  }

  // Writes from the next one on are measured.
  void StartMeasuring() { measured_from_ = writes(); }
  // Hands out the latencies recorded so far and starts new ones: one
  // phase's figures.
  void TakeLatencies(LatencyRecorder* latency, LatencyRecorder* from_send) {
    *latency = std::exchange(latency_, LatencyRecorder(kMaxSamples));
    *from_send = std::exchange(from_send_, LatencyRecorder(kMaxSamples));
  }
  bool AllIn(uint64_t w) const { return delivered_[w] >= shape_.per_write() && acked(w); }
  bool AllIn() const { return acked_ == writes() && ok_ + bad_ + out_of_order_ >= Expected(); }
  bool acked(uint64_t w) const { return ack_at_[w] != SteadyClock::time_point{}; }

  uint64_t writes() const { return ack_at_.size(); }
  uint64_t Expected() const { return writes() * shape_.per_write(); }
  uint64_t lost() const { return Expected() > ok_ ? Expected() - ok_ : 0; }
  uint64_t out_of_order() const { return out_of_order_; }
  uint64_t bad() const { return bad_ + bad_acks_; }
  uint64_t coalesced() const { return coalesced_; }
  uint64_t measured() const { return measured_; }
  uint64_t measured_writes() const { return writes() - measured_from_; }
  uint64_t before_ack() const { return before_ack_; }
  const LatencyRecorder& latency() const { return latency_; }
  const LatencyRecorder& from_send() const { return from_send_; }

 private:
  static constexpr size_t kMaxSamples = 4'000'000;

  // {"k":KEY,"n":N,"p":"..."}: names the key and its write number.
  void ValueText(std::string_view key, uint64_t n, std::string* out) const {
    out->assign(R"({"k":")");
    out->append(key);
    out->append(R"(","n":)");
    out->append(std::to_string(n));
    out->append(R"(,"p":")");
    out->append(pad_);
    out->append(R"("})");
  }

  Shape shape_;
  std::string pad_;
  std::unordered_map<std::string, uint32_t, TransparentHash, std::equal_to<>> index_;
  std::vector<uint32_t> last_;  // per watcher and key of its topic
  std::vector<uint64_t> last_version_;
  std::vector<SteadyClock::time_point> sent_at_;  // per write
  std::vector<SteadyClock::time_point> ack_at_;   // per write; zero: not yet
  std::vector<uint32_t> delivered_;               // per write
  uint64_t acked_ = 0, ok_ = 0, bad_ = 0, bad_acks_ = 0, out_of_order_ = 0, coalesced_ = 0;
  // Nothing is measured before StartMeasuring.
  uint64_t measured_from_ = UINT64_MAX, measured_ = 0, before_ack_ = 0;
  LatencyRecorder latency_{kMaxSamples};    // from the acknowledgement
  LatencyRecorder from_send_{kMaxSamples};  // from the write's send
  std::string scratch_;
};

bool CheckDescriptors(benchmark::State& state, size_t n) {
  const uint64_t limit = RaiseDescriptorLimit();
  if (limit >= n + 256) return true;
  const std::string why = "needs " + std::to_string(n + 256) +
                          " descriptors in this process and in the server; the hard limit here "
                          "is " +
                          std::to_string(limit) + " (raise it with ulimit -Hn)";
  std::fprintf(stderr, "fanout_bench: *** %s ***\n", why.c_str());
  state.SkipWithError(why.c_str());
  return false;
}

double ResidentBytes(const FanoutServer& s) { return double(support::ResidentBytes(s.pid())); }

// Sends writes every `interval` for `span` (open loop: a write late on its
// schedule goes at once), calling tick() in between; false once the
// client failed.
bool WriteAtRate(
    FanoutClient& client, Ledger& ledger, nanoseconds interval, nanoseconds span,
    const std::function<void()>& tick = [] {}) {
  const auto start = SteadyClock::now();
  for (int64_t k = 0;; ++k) {
    const auto due = start + interval * k;
    if (due >= start + span) break;
    client.RunUntil([] { return false; }, due - SteadyClock::now());
    if (!client.error().empty()) return false;
    tick();
    ledger.Write(client);
  }
  return true;
}

// One case's server, its watchers connected (not yet watching) and the
// ledger every delivery and acknowledgement goes to.
struct Rig {
  std::unique_ptr<FanoutServer> server;
  std::unique_ptr<FanoutClient> client;
  std::unique_ptr<Ledger> ledger;

  // Ends the case with `what`, and the client's own error if it has one.
  void Fail(benchmark::State& state, const std::string& what) const {
    const std::string& why = client->error();
    state.SkipWithError((what + (why.empty() ? "" : ": " + why)).c_str());
  }
};

Result<Rig> StartRig(benchmark::State& state, const std::string& name, const FanoutPaths& paths,
                     const Shape& shape) {
  Rig rig;
  SKIFF_ASSIGN_OR_RETURN(rig.server, FanoutServer::Start(name, paths));
  state.SetLabel(rig.server->SetUp());
  rig.client = rig.server->NewClient();
  rig.ledger = std::make_unique<Ledger>(shape);
  Ledger* ledger = rig.ledger.get();
  rig.client->set_on_delivery([ledger](const FanoutDelivery& d) { ledger->Deliver(d); });
  rig.client->set_on_ack([ledger](uint64_t w) { ledger->Ack(w); });
  SKIFF_RETURN_IF_ERROR(rig.client->Connect(rig.server->port(), shape.watchers, kSetUpTimeout));
  return rig;
}

void BM_FanOut(benchmark::State& state, const Shape& shape, const std::string& name) {
  if (!CheckDescriptors(state, shape.watchers)) return;
  const FanoutPaths paths = Paths();
  if (std::string missing = FanoutServer::Missing(name, paths); !missing.empty()) {
    std::fprintf(stderr, "fanout_bench: *** %s: %s; skipped ***\n", name.c_str(), missing.c_str());
    state.SkipWithError(("skipped: " + missing).c_str());
    return;
  }
  for (auto _ : state) {
    Result<Rig> rig = StartRig(state, name, paths, shape);
    if (!rig.ok()) return state.SkipWithError(rig.status().ToString().c_str());
    FanoutServer& server = *rig->server;
    FanoutClient* client = rig->client.get();
    Ledger& ledger = *rig->ledger;
    auto fail = [&](const std::string& what) { rig->Fail(state, what); };
    const double rss_connected = ResidentBytes(server);
    if (Status s = client->Subscribe(ledger.Topics(), kSetUpTimeout); !s.ok()) {
      return state.SkipWithError(s.ToString().c_str());
    }
    const double rss_watching = ResidentBytes(server);

    // Warm-up, then the measured part: one write at a time, each waiting
    // for all its deliveries and its ack; or a steady rate (open loop:
    // a write late on its schedule goes at once) and then the drain.
    const nanoseconds interval(int64_t(1e9 / shape.writes_per_s()));
    auto at_rate = [&](nanoseconds span) { return WriteAtRate(*client, ledger, interval, span); };
    auto one_at_a_time = [&](size_t writes) {
      for (size_t k = 0; k < writes; ++k) {
        const uint64_t w = ledger.writes();
        ledger.Write(*client);
        if (!client->RunUntil([&] { return ledger.AllIn(w); }, kDrainTimeout)) return false;
      }
      return true;
    };
    const bool warm = shape.rate ? at_rate(Warmup()) : one_at_a_time(5);
    if (!warm || !client->RunUntil([&] { return ledger.AllIn(); }, kDrainTimeout)) {
      return fail("the warm-up's deliveries did not all arrive");
    }
    ledger.StartMeasuring();
    const double server_cpu_0 = support::CpuSecondsOf(server.pid());
    const double client_cpu_0 = ThisProcessCpuSeconds();
    const auto start = SteadyClock::now();
    bool done = shape.rate ? at_rate(Window()) : one_at_a_time(WritesOneAtATime(shape));
    done = done && client->RunUntil([&] { return ledger.AllIn(); }, kDrainTimeout);
    const double elapsed = std::chrono::duration<double>(SteadyClock::now() - start).count();
    const double server_cpu = support::CpuSecondsOf(server.pid()) - server_cpu_0;
    const double client_cpu = ThisProcessCpuSeconds() - client_cpu_0;
    state.SetIterationTime(elapsed);

    const size_t open = client->open_watchers();
    SetDeterministic(state, "watchers", double(open));
    SetDeterministic(state, "lost_deliveries", double(ledger.lost()));
    SetDeterministic(state, "out_of_order", double(ledger.out_of_order()));
    if (ledger.bad() > 0) {
      return fail(std::to_string(ledger.bad()) + " deliveries or acks were not of a write sent");
    }
    if (ledger.lost() > 0 || ledger.out_of_order() > 0) {
      return fail(std::to_string(ledger.lost()) + " deliveries lost (" +
                  std::to_string(ledger.coalesced()) + " coalesced events), " +
                  std::to_string(ledger.out_of_order()) + " out of order, of " +
                  std::to_string(ledger.Expected()));
    }
    if (!done || !client->error().empty()) return fail("the deliveries did not all arrive");
    if (ledger.measured() == 0) return fail("no delivery in the measured part");

    const double deliveries = double(ledger.measured());
    const LatencySummary lat = ledger.latency().Summarize();
    const LatencySummary from_send = ledger.from_send().Summarize();
    state.SetItemsProcessed(int64_t(deliveries));
    SetJudged(state, "server_cpu_us_per_op", server_cpu / deliveries * 1e6);
    SetJudged(state, "server_rss_mib", rss_watching / (1024.0 * 1024.0));
    SetInfo(state, "deliveries_per_s", deliveries / elapsed);
    SetInfo(state, "writes", double(ledger.measured_writes()));
    SetInfo(state, "p50_us", lat.p50_us);
    SetInfo(state, "p99_us", lat.p99_us);
    SetInfo(state, "max_us", lat.max_us);
    SetInfo(state, "p50_from_send_us", from_send.p50_us);
    SetInfo(state, "p99_from_send_us", from_send.p99_us);
    SetInfo(state, "deliveries_before_ack", double(ledger.before_ack()));
    SetInfo(state, "bytes_per_watch", (rss_watching - rss_connected) / double(shape.watchers));
    SetInfo(state, "server_cores", server_cpu / elapsed);
    SetInfo(state, "client_cores", client_cpu / elapsed);
    std::fprintf(stderr,
                 "%s %s: %.0f deliveries/s, after ack p50/p99/max %.0f/%.0f/%.0f us, after send "
                 "p50/p99 %.0f/%.0f us, %.2f us CPU per delivery, %.0f bytes per watch\n",
                 shape.Name().c_str(), name.c_str(), deliveries / elapsed, lat.p50_us, lat.p99_us,
                 lat.max_us, from_send.p50_us, from_send.p99_us, server_cpu / deliveries * 1e6,
                 (rss_watching - rss_connected) / double(shape.watchers));
    client->Close();
  }
}

// The slow-reader case, skiffd only: the peers have no per-reader bound
// of this kind (none coalesces a key's changes for a slow reader; Redis
// and NATS cut such a subscriber off past an output limit instead).
//
// The bounds are small, so the slow watcher's queue fills within the
// window, yet a reading watcher falls that far behind only when the server
// does (60 events, over 2 s at this rate): its deliveries coalesce then.
constexpr size_t kCoalesceBytes = 64 * 1024;
constexpr size_t kQueueBytes = 256 * 1024;
// Changes held for `since`: few, so the history is full from the warm-up
// on and its memory is no part of the growth.
constexpr size_t kSlowHistory = 64;
constexpr size_t kSlowValueBytes = 1024;
constexpr int kStalledReceiveBuffer = 4096;
// Replies the slow watcher asks for and never reads, so its changes meet a
// full pipe from the start: 512 KB, more than loopback's buffers hold
// (under --max-output-bytes, past which the server stops reading it), and
// the time the server takes to send them.
constexpr size_t kFillValueBytes = 32 * 1024;
constexpr size_t kFillReads = 16;
constexpr auto kFillSettle = std::chrono::milliseconds(500);
// A quarter of one_key_rate's (25 writes/s to 1,000 watchers): the values
// are ten times larger, and the server must keep up on a shared machine.
constexpr double kSlowDeliveriesPerSecond = kDeliveriesPerSecond / 4;
// What one delivery of a change may hold on the server while a reading
// watcher has not read it yet (the value and the event around it).
constexpr double kDeliveryBytes = kSlowValueBytes + 256;
// What skiffd may hold for the slow watcher: its queue (at most
// kQueueBytes) and the connection's unsent bytes (below kCoalesceBytes
// when an event joins them, so at most one event past it). The growth
// may be twice that, for the allocator's slack and page rounding.
constexpr double kRssGrowthBoundBytes = 2.0 * (kQueueBytes + kCoalesceBytes + 2 * kSlowValueBytes);

// Each phase; under skiffd's 30 s --send-timeout-s, which would close the
// slow watcher's connection (its output makes no progress) if the phase
// and the drain outlasted it.
nanoseconds SlowWindow() { return ByProfile<nanoseconds>(seconds(4), seconds(6), seconds(10)); }

// 1,000 in every profile: at 10,000 the same delivery rate is 2.5 writes
// a second, and the slow watcher's queue would take most of the send
// timeout to pass --watch-coalesce-bytes.
std::vector<size_t> SlowWatcherSizes() { return {1000}; }

// What the slow watcher got once it read again.
struct StalledCheck {
  uint64_t changes = 0, coalesced = 0, last_n = 0;
  bool overflow = false;  // an `ended` event with reason overflow
  std::string error;      // a wrong, out-of-order or unexpected event
};

// Reads the slow watcher's socket until its watch ended or the latest
// write (number `last_n` of key `key`) came: coalescing keeps the latest.
StalledCheck CheckStalled(StalledWatcher& slow, std::string_view key, uint64_t last_n) {
  StalledCheck c;
  uint64_t last_version = 0;
  const Status s = slow.Drain(
      [&](std::string_view payload) {
        if (payload.starts_with(R"({"id":)")) {  // a reply to FillPipe
          if (payload.find(R"("ok":true)") == std::string_view::npos) {
            c.error = "refused: " + std::string(payload.substr(0, 200));
            return false;
          }
          return true;
        }
        if (payload.starts_with(R"({"event":"ended",)")) {
          c.overflow = payload.find(R"("reason":"overflow")") != std::string_view::npos;
          if (!c.overflow) c.error = "ended: " + std::string(payload.substr(0, 200));
          return false;
        }
        FanoutDelivery d;
        uint64_t n = 0;
        if (!payload.starts_with(R"({"event":"change",)") || !ParseChange(payload, &d) ||
            d.key != key || !ParseNumber(d.value, R"("n":)", &n)) {
          c.error = "unexpected: " + std::string(payload.substr(0, 200));
          return false;
        }
        if (n <= c.last_n || d.version <= last_version) {
          c.error = "write " + std::to_string(n) + " after " + std::to_string(c.last_n);
          return false;
        }
        c.last_n = n;
        last_version = d.version;
        ++c.changes;
        if (d.coalesced) ++c.coalesced;
        return n < last_n;
      },
      kDrainTimeout);
  if (!s.ok() && c.error.empty()) c.error = s.ToString();
  return c;
}

// One phase: writes at the rate for `span`, then until every delivery to
// the reading watchers is in; the server's RSS sampled every 50 ms.
struct SlowPhase {
  LatencyRecorder latency, from_send;
  double rss_start = 0, rss_peak = 0;
  double server_cpu = 0;  // seconds
  // The most deliveries to the reading watchers not read yet at a sample:
  // memory the server may hold for them rather than for the slow one.
  uint64_t peak_behind = 0;
  double seconds = 0;
  uint64_t deliveries = 0;
};

bool RunSlowPhase(FanoutClient& client, Ledger& ledger, const FanoutServer& server,
                  nanoseconds interval, nanoseconds span, SlowPhase* phase) {
  phase->rss_start = phase->rss_peak = ResidentBytes(server);
  auto next_sample = SteadyClock::now();
  auto sample = [&] {
    if (SteadyClock::now() < next_sample) return;
    next_sample += std::chrono::milliseconds(50);
    phase->rss_peak = std::max(phase->rss_peak, ResidentBytes(server));
    phase->peak_behind = std::max(phase->peak_behind, ledger.lost());
  };
  const uint64_t before = ledger.measured();
  const double cpu_0 = support::CpuSecondsOf(server.pid());
  const auto start = SteadyClock::now();
  bool done = WriteAtRate(client, ledger, interval, span, sample);
  done = done && client.RunUntil([&] { return ledger.AllIn(); }, kDrainTimeout);
  phase->seconds = std::chrono::duration<double>(SteadyClock::now() - start).count();
  phase->rss_peak = std::max(phase->rss_peak, ResidentBytes(server));
  phase->deliveries = ledger.measured() - before;
  phase->server_cpu = support::CpuSecondsOf(server.pid()) - cpu_0;
  ledger.TakeLatencies(&phase->latency, &phase->from_send);
  return done;
}

// BM_FanOut/slow_watcher/w:N/skiffd: N watchers of one key, one of which
// stops reading. A phase without it (connected, not watching), one with
// it watching and never read, one after it left; the reading watchers'
// p99 beside it compared with both phases without it together.
void BM_SlowWatcher(benchmark::State& state, size_t n) {
  if (!CheckDescriptors(state, n)) return;
  FanoutPaths paths = Paths();
  for (const std::string& a :
       {std::string("--watch-coalesce-bytes"), std::to_string(kCoalesceBytes),
        std::string("--watch-queue-bytes"), std::to_string(kQueueBytes),
        std::string("--watch-history"), std::to_string(kSlowHistory)}) {
    paths.skiffd_args.push_back(a);
  }
  // The reading watchers: N - 1.
  Shape shape{"slow_watcher", n - 1, 1, 1, true, kSlowValueBytes};
  for (auto _ : state) {
    Result<Rig> rig = StartRig(state, "skiffd", paths, shape);
    if (!rig.ok()) return state.SkipWithError(rig.status().ToString().c_str());
    FanoutServer& server = *rig->server;
    FanoutClient* client = rig->client.get();
    Ledger& ledger = *rig->ledger;
    auto fail = [&](const std::string& what) { rig->Fail(state, what); };
    std::unique_ptr<StalledWatcher> slow = server.NewStalledWatcher();
    if (Status s = slow->Connect(server.port(), kStalledReceiveBuffer, kSetUpTimeout); !s.ok()) {
      return state.SkipWithError(("the slow watcher: " + s.ToString()).c_str());
    }
    if (Status s = client->Subscribe(ledger.Topics(), kSetUpTimeout); !s.ok()) {
      return state.SkipWithError(s.ToString().c_str());
    }

    const nanoseconds interval(int64_t(1e9 / (kSlowDeliveriesPerSecond / double(n))));
    if (!WriteAtRate(*client, ledger, interval, Warmup()) ||
        !client->RunUntil([&] { return ledger.AllIn(); }, kDrainTimeout)) {
      return fail("the warm-up's deliveries did not all arrive");
    }
    ledger.StartMeasuring();
    SlowPhase without, with;
    if (!RunSlowPhase(*client, ledger, server, interval, SlowWindow(), &without)) {
      return fail("the deliveries without the slow watcher did not all arrive");
    }
    const uint64_t watched_from = ledger.writes();  // writes before the slow watch
    if (Status s = slow->Watch(ledger.KeyName(0, 0), kSetUpTimeout); !s.ok()) {
      return state.SkipWithError(("the slow watcher: " + s.ToString()).c_str());
    }
    if (Status s = slow->FillPipe(kFillValueBytes, kFillReads); !s.ok()) {
      return state.SkipWithError(("the slow watcher: " + s.ToString()).c_str());
    }
    client->RunUntil([] { return false; }, kFillSettle);
    bool done = RunSlowPhase(*client, ledger, server, interval, SlowWindow(), &with);
    const double server_cpu = with.server_cpu;
    state.SetIterationTime(with.seconds);

    // The slow watcher, read now: its watch ended with overflow, or it
    // coalesced and ends with the latest value. Then it leaves, and a last
    // phase runs without it, as the first did: the two together are the
    // baseline, so drift over the case weighs on neither side alone.
    const uint64_t slow_writes = ledger.writes() - watched_from;
    StalledCheck c;
    if (done) c = CheckStalled(*slow, ledger.KeyName(0, 0), ledger.writes());
    slow.reset();
    SlowPhase after;
    done = done && RunSlowPhase(*client, ledger, server, interval, SlowWindow(), &after);

    // The reading watchers: every delivery, in order, still connected.
    SetDeterministic(state, "watchers", double(client->open_watchers()));
    SetDeterministic(state, "lost_deliveries", double(ledger.lost()));
    SetDeterministic(state, "out_of_order", double(ledger.out_of_order()));
    if (ledger.bad() > 0) {
      return fail(std::to_string(ledger.bad()) + " deliveries or acks were not of a write sent");
    }
    if (ledger.lost() > 0 || ledger.out_of_order() > 0 || ledger.coalesced() > 0) {
      return fail(std::to_string(ledger.lost()) + " deliveries lost, " +
                  std::to_string(ledger.coalesced()) + " coalesced, " +
                  std::to_string(ledger.out_of_order()) + " out of order");
    }
    if (!done || !client->error().empty()) return fail("the deliveries did not all arrive");
    if (without.deliveries == 0 || with.deliveries == 0 || after.deliveries == 0) {
      return fail("a phase had no delivery");
    }
    if (!c.error.empty()) return state.SkipWithError(("the slow watcher: " + c.error).c_str());

    const double growth = with.rss_peak - with.rss_start;
    const double alone_growth =
        std::max(without.rss_peak - without.rss_start, after.rss_peak - after.rss_start);
    without.latency.Merge(after.latency);
    without.from_send.Merge(after.from_send);
    without.server_cpu += after.server_cpu;
    without.deliveries += after.deliveries;
    const LatencySummary a = without.latency.Summarize(), b = with.latency.Summarize();
    const LatencySummary as = without.from_send.Summarize(), bs = with.from_send.Summarize();
    state.SetItemsProcessed(int64_t(with.deliveries));
    SetJudged(state, "server_cpu_us_per_op", server_cpu / double(with.deliveries) * 1e6);
    SetJudged(state, "rss_growth_kib", growth / 1024.0);
    SetInfo(state, "rss_growth_bound_kib", kRssGrowthBoundBytes / 1024.0);
    SetInfo(state, "alone_rss_growth_kib", alone_growth / 1024.0);
    SetInfo(state, "alone_server_cpu_us_per_op",
            without.server_cpu / double(without.deliveries) * 1e6);
    SetInfo(state, "p99_us", b.p99_us);
    SetInfo(state, "alone_p99_us", a.p99_us);
    SetInfo(state, "others_p99_ratio", b.p99_us / a.p99_us);
    SetInfo(state, "p99_from_send_us", bs.p99_us);
    SetInfo(state, "alone_p99_from_send_us", as.p99_us);
    SetInfo(state, "slow_changes", double(c.changes));
    SetInfo(state, "slow_skipped", double(slow_writes - c.changes));
    SetInfo(state, "slow_coalesced", double(c.coalesced));
    SetInfo(state, "slow_overflow", c.overflow ? 1 : 0);
    std::fprintf(stderr,
                 "slow_watcher/w:%zu skiffd: the others' p99 %.0f us beside the slow watcher, "
                 "%.0f us without (%.2fx; goal <= 2); from the send %.0f / %.0f us; server CPU "
                 "%.2f / %.2f us per delivery; server RSS grew %.0f KiB (bound %.0f KiB; %.0f KiB "
                 "without it); the slow watcher got %llu of the %llu changes since its watch, "
                 "%llu marked coalesced%s\n",
                 n, b.p99_us, a.p99_us, b.p99_us / a.p99_us, bs.p99_us, as.p99_us,
                 server_cpu / double(with.deliveries) * 1e6,
                 without.server_cpu / double(without.deliveries) * 1e6, growth / 1024.0,
                 kRssGrowthBoundBytes / 1024.0, alone_growth / 1024.0,
                 static_cast<unsigned long long>(c.changes),
                 static_cast<unsigned long long>(slow_writes),
                 static_cast<unsigned long long>(c.coalesced),
                 c.overflow ? ", then its watch ended (overflow)" : "");
    if (!c.overflow && c.coalesced == 0) {
      return state.SkipWithError(
          "the slow watcher's queue never reached --watch-coalesce-bytes: it got every change");
    }
    // Growth past the bound is reported, not failed: the reading watchers'
    // output buffers grow too whenever the server falls behind them (a
    // loaded machine), and the allocator keeps what it took. Each may hold
    // a couple of events then, more when the client saw it behind.
    const double allowed =
        kRssGrowthBoundBytes +
        double(std::max<uint64_t>(with.peak_behind, 2 * shape.watchers)) * kDeliveryBytes;
    SetInfo(state, "rss_over_bound", growth > allowed ? 1 : 0);
    if (growth > allowed) {
      std::fprintf(stderr,
                   "fanout_bench: *** the server's RSS grew %.0f KiB beside the slow watcher, "
                   "over its bound (%.0f KiB with %llu deliveries to the others unread at "
                   "most); the others' p99 from the send was %.0f us ***\n",
                   growth / 1024.0, allowed / 1024.0,
                   static_cast<unsigned long long>(with.peak_behind), bs.p99_us);
    }
    client->Close();
  }
}

const bool kRegistered = AddRegistration([] {
  for (const Shape& shape : Shapes()) {
    for (const std::string& name : FanoutServerNames()) {
      AddCase("BM_FanOut/" + shape.Name() + "/" + name,
              [shape, name](benchmark::State& s) { BM_FanOut(s, shape, name); })
          ->UseManualTime()
          ->Iterations(1)
          ->Unit(benchmark::kMillisecond);
    }
  }
  for (size_t n : SlowWatcherSizes()) {
    AddCase("BM_FanOut/slow_watcher/w:" + std::to_string(n) + "/skiffd",
            [n](benchmark::State& s) { BM_SlowWatcher(s, n); })
        ->UseManualTime()
        ->Iterations(1)
        ->Unit(benchmark::kMillisecond);
  }
});

}  // namespace
}  // namespace skiff::bench
