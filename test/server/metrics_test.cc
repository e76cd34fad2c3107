// /metrics and the per-user and per-address limits against a real skiffd
// child: plain HTTP from a raw socket, the counters moving with real
// requests, each limit refusing with rate_limited and retry_after_ms and
// then letting the same request through, and a real Prometheus scraping it.
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <nlohmann/json.hpp>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server/users.h"
#include "store/store.h"
#include "support/process.h"
#include "support/skiffd_process.h"

#include "test/server/ws_peer.h"
#include "test/status_matchers.h"

namespace skiff {
namespace {

using json = nlohmann::json;
using std::chrono::milliseconds;
using testing::WsPeer;

// A plain HTTP GET to 127.0.0.1:port, read to the server's close; the whole
// answer, head and body ("" when the connection failed).
std::string HttpGet(uint16_t port, const std::string& target) {
  WsPeer peer;
  if (!peer.Connect(port)) return "";
  if (!peer.SendRaw("GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                    "\r\nConnection: close\r\n\r\n")) {
    return "";
  }
  peer.WaitEnd();
  return peer.raw();
}

std::string Body(const std::string& response) {
  const size_t end = response.find("\r\n\r\n");
  return end == std::string::npos ? "" : response.substr(end + 4);
}

// The value of one sample line `series` (name with its labels, as written)
// on a /metrics page; nullopt when the page has no such line.
std::optional<double> SampleOf(const std::string& page, const std::string& series) {
  const std::string prefix = "\n" + series + " ";
  const size_t at = page.find(prefix);
  if (at == std::string::npos) return std::nullopt;
  return std::stod(page.substr(at + prefix.size(), page.find('\n', at + 1) - at - prefix.size()));
}

double Requests(const std::string& page, const std::string& op, const std::string& outcome) {
  return SampleOf(page, "skiff_requests_total{op=\"" + op + "\",outcome=\"" + outcome + "\"}")
      .value_or(0);
}

// A WebSocket connection speaking the protocol's JSON, one reply at a time.
class Peer {
 public:
  bool Open(uint16_t port) { return ws_.Open(port); }
  // Sends `request` (its id set) and returns the reply with that id.
  json Call(json request) {
    request["id"] = ++id_;
    if (!ws_.SendText(request.dump())) return json();
    return Reply(id_);
  }
  void Send(json request) {
    request["id"] = ++id_;
    ws_.SendText(request.dump());
  }
  json Reply(uint64_t id) {
    for (int i = 0; i < 1000; ++i) {
      std::optional<std::string> text = ws_.NextText();
      if (!text) return json();
      json reply = json::parse(*text, nullptr, false);
      if (reply.is_object() && reply.value("id", uint64_t{0}) == id) return reply;
    }
    return json();
  }
  uint64_t last_id() const { return id_; }

 private:
  WsPeer ws_;
  uint64_t id_ = 0;
};

std::string ErrorCode(const json& reply) {
  if (!reply.is_object() || !reply.contains("error")) return reply.value("ok", false) ? "ok" : "";
  return reply["error"].value("code", "");
}

class MetricsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "skiff-metrics-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    url_ = "sqlite:" + (dir_ / "skiff.db").string();
    auto store = store::OpenStore(url_);
    ASSERT_OK(store);
    auto created = server::CreateUser(**store, "ops", server::Permissions({"*"}, {"*"}));
    ASSERT_OK(created);
    secret_ = *created;
  }
  void TearDown() override {
    skiffd_.Kill();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  uint16_t Spawn(std::vector<std::string> flags = {}) {
    flags.insert(flags.begin(), {"--store=" + url_, "--io-threads", "1"});
    Status started = skiffd_.Start(SKIFFD_PATH, flags);
    EXPECT_OK(started);
    return started.ok() ? skiffd_.port() : 0;
  }

  json Login(Peer& p, const std::string& secret) {
    return p.Call({{"op", "login"}, {"user", "ops"}, {"secret", secret}});
  }

  std::filesystem::path dir_;
  std::string url_;
  std::string secret_;
  support::SkiffdProcess skiffd_;
};

TEST_F(MetricsTest, ServesTheTextFormatOverPlainHttpAndCountsRealRequests) {
  const uint16_t port = Spawn();
  ASSERT_NE(port, 0);
  const std::string first = HttpGet(port, "/metrics");
  ASSERT_EQ(first.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << first;
  EXPECT_NE(first.find("Content-Type: text/plain; version=0.0.4"), std::string::npos);
  const std::string before = Body(first);
  for (const char* family :
       {"# TYPE skiff_connections_open gauge", "# TYPE skiff_requests_total counter",
        "# TYPE skiff_request_duration_seconds histogram",
        "# TYPE skiff_rate_limited_total counter", "# TYPE skiff_commit_batches_total counter",
        "# TYPE skiff_tier_bytes gauge", "# TYPE skiff_sync_waits_held gauge",
        "# TYPE skiff_connections_refused_total counter"}) {
    EXPECT_NE(before.find(family), std::string::npos) << family;
  }
  EXPECT_EQ(Requests(before, "get", "ok"), 0);

  Peer p;
  ASSERT_TRUE(p.Open(port));
  EXPECT_EQ(ErrorCode(p.Call({{"op", "get"}, {"table", "t"}, {"key", "k"}})), "unauthorized");
  ASSERT_EQ(ErrorCode(Login(p, secret_)), "ok");
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ(ErrorCode(p.Call({{"op", "set"},
                                {"table", "t"},
                                {"key", "k" + std::to_string(i)},
                                {"value", {{"n", i}}}})),
              "ok");
  }
  for (int i = 0; i < 7; ++i) {
    ASSERT_EQ(ErrorCode(p.Call({{"op", "get"}, {"table", "t"}, {"key", "k1"}})), "ok");
  }

  const std::string after = Body(HttpGet(port, "/metrics"));
  EXPECT_EQ(Requests(after, "get", "ok"), 7) << after;
  EXPECT_EQ(Requests(after, "get", "unauthorized"), 1);
  EXPECT_EQ(Requests(after, "set", "ok"), 5);
  EXPECT_EQ(Requests(after, "login", "ok"), 1);
  EXPECT_EQ(SampleOf(after, "skiff_sessions_open"), 1);
  // Counted on the same page as the histogram of their class.
  EXPECT_EQ(SampleOf(after, "skiff_request_duration_seconds_count{class=\"read\"}"), 8);
  EXPECT_EQ(SampleOf(after, "skiff_request_duration_seconds_bucket{class=\"write\",le=\"+Inf\"}"),
            5);
  EXPECT_GE(SampleOf(after, "skiff_commit_writes_total").value_or(0), 5);
  EXPECT_EQ(SampleOf(after, "skiff_tier_documents{tier=\"hot\"}").value_or(0) +
                SampleOf(after, "skiff_tier_documents{tier=\"packed\"}").value_or(0),
            5);
  // The scrapes themselves are counted as plain HTTP connections, not
  // requests; the page is served even to a client that never logs in.
  EXPECT_GE(SampleOf(after, "skiff_connections_accepted_total").value_or(0), 3);

  // /healthz still answers beside it.
  EXPECT_EQ(HttpGet(port, "/healthz").rfind("HTTP/1.1 200", 0), 0u);
  ASSERT_OK(skiffd_.Stop());
}

TEST_F(MetricsTest, UserRateRefusesWithRetryAfterThenRecovers) {
  // One token a second and a burst of three: of fifty requests sent at once
  // the first three are answered (the bucket starts full) and the rest are
  // refused, but for one more per second the server takes to read them (so
  // refusals remain however slow a loaded machine reads them).
  const uint16_t port = Spawn({"--user-rate", "1", "--user-burst", "3"});
  ASSERT_NE(port, 0);
  Peer p;
  ASSERT_TRUE(p.Open(port));
  ASSERT_EQ(ErrorCode(Login(p, secret_)), "ok");  // not counted: no session yet
  const uint64_t first = p.last_id() + 1;
  for (int i = 0; i < 50; ++i) p.Send({{"op", "get"}, {"table", "t"}, {"key", "k"}});
  int ok = 0;
  int refused = 0;
  uint64_t retry_after_ms = 0;
  for (uint64_t id = first; id < first + 50; ++id) {
    const json reply = p.Reply(id);
    const std::string code = ErrorCode(reply);
    if (id < first + 3) {
      EXPECT_EQ(code, "ok") << id;
    }
    if (code == "ok") {
      ++ok;
    } else {
      ASSERT_EQ(code, "rate_limited") << reply.dump();
      ++refused;
      retry_after_ms = reply["error"].value("retry_after_ms", uint64_t{0});
      EXPECT_GE(retry_after_ms, 1u) << reply.dump();
      EXPECT_LE(retry_after_ms, 1000u) << reply.dump();
      EXPECT_NE(reply["error"].value("message", "").find("rate"), std::string::npos);
    }
  }
  EXPECT_GE(ok, 3);
  EXPECT_GE(refused, 1);
  EXPECT_EQ(ok + refused, 50);

  // After the wait the server named, the same request goes through.
  std::string code;
  for (int attempt = 0; attempt < 5 && code != "ok"; ++attempt) {
    std::this_thread::sleep_for(milliseconds(retry_after_ms));
    const json reply = p.Call({{"op", "get"}, {"table", "t"}, {"key", "k"}});
    code = ErrorCode(reply);
    retry_after_ms = code == "rate_limited" ? reply["error"].value("retry_after_ms", 1000u) : 0;
  }
  EXPECT_EQ(code, "ok");

  const std::string page = Body(HttpGet(port, "/metrics"));
  const double limited = Requests(page, "get", "rate_limited");
  EXPECT_GE(limited, refused);
  EXPECT_EQ(SampleOf(page, "skiff_rate_limited_total{reason=\"user_rate\"}"), limited);
}

TEST_F(MetricsTest, SessionsPerUserRefuseTheThirdLoginUntilOneEnds) {
  const uint16_t port = Spawn({"--max-connections-per-user", "2"});
  ASSERT_NE(port, 0);
  Peer a, b, c;
  ASSERT_TRUE(a.Open(port));
  ASSERT_TRUE(b.Open(port));
  ASSERT_TRUE(c.Open(port));
  ASSERT_EQ(ErrorCode(Login(a, secret_)), "ok");
  ASSERT_EQ(ErrorCode(Login(b, secret_)), "ok");
  const json refused = Login(c, secret_);
  ASSERT_EQ(ErrorCode(refused), "rate_limited") << refused.dump();
  EXPECT_GE(refused["error"].value("retry_after_ms", uint64_t{0}), 1u);
  // Not logged in: the refused connection may not read.
  EXPECT_EQ(ErrorCode(c.Call({{"op", "get"}, {"table", "t"}, {"key", "k"}})), "unauthorized");

  ASSERT_EQ(ErrorCode(a.Call({{"op", "logout"}})), "ok");
  EXPECT_EQ(ErrorCode(Login(c, secret_)), "ok");

  const json stats = c.Call({{"op", "stats"}});
  ASSERT_EQ(ErrorCode(stats), "ok") << stats.dump();
  EXPECT_EQ(stats["limits"].value("refused_user_connections", 0), 1) << stats.dump();
  const std::string page = Body(HttpGet(port, "/metrics"));
  EXPECT_EQ(SampleOf(page, "skiff_rate_limited_total{reason=\"user_connections\"}"), 1);
  EXPECT_EQ(Requests(page, "login", "rate_limited"), 1);
  EXPECT_EQ(SampleOf(page, "skiff_sessions_open"), 2);
}

TEST_F(MetricsTest, FailedLoginsBlockTheAddressWithoutCheckingTheSecret) {
  // A window long enough that three failed logins in a row land in it on a
  // loaded machine too.
  const uint16_t port = Spawn({"--max-failed-logins", "3", "--failed-login-window-ms", "10000"});
  ASSERT_NE(port, 0);
  Peer p;
  ASSERT_TRUE(p.Open(port));
  const std::string wrong(64, '0');
  for (int i = 0; i < 3; ++i) ASSERT_EQ(ErrorCode(Login(p, wrong)), "unauthorized") << i;
  // Blocked: even the right secret is refused, unread.
  json reply = Login(p, secret_);
  ASSERT_EQ(ErrorCode(reply), "rate_limited") << reply.dump();
  uint64_t retry_after_ms = reply["error"].value("retry_after_ms", uint64_t{0});
  EXPECT_GE(retry_after_ms, 1u);
  EXPECT_LE(retry_after_ms, 10000u);
  // Another connection from the same address is blocked too.
  Peer other;
  ASSERT_TRUE(other.Open(port));
  EXPECT_EQ(ErrorCode(Login(other, secret_)), "rate_limited");

  std::string code;
  for (int attempt = 0; attempt < 5 && code != "ok"; ++attempt) {
    std::this_thread::sleep_for(milliseconds(retry_after_ms));
    reply = Login(p, secret_);
    code = ErrorCode(reply);
    retry_after_ms = code == "rate_limited" ? reply["error"].value("retry_after_ms", 10000u) : 0;
  }
  EXPECT_EQ(code, "ok");

  const std::string page = Body(HttpGet(port, "/metrics"));
  EXPECT_EQ(SampleOf(page, "skiff_failed_logins_total"), 3);
  EXPECT_GE(SampleOf(page, "skiff_rate_limited_total{reason=\"failed_logins\"}").value_or(0), 2);
  EXPECT_EQ(Requests(page, "login", "unauthorized"), 3);
}

// A free TCP port on 127.0.0.1 for a child to bind (released just before).
uint16_t FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  uint16_t port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

// --metrics-address: the page on a listener of its own, 404 on the main
// port, and nothing a client sends to the metrics port harms either.
TEST_F(MetricsTest, MetricsAddressServesThePageApartAndClosesBadRequests) {
  const uint16_t metrics = FreePort();
  ASSERT_NE(metrics, 0);
  const uint16_t port = Spawn({"--metrics-address", "127.0.0.1:" + std::to_string(metrics)});
  ASSERT_NE(port, 0);
  Peer p;
  ASSERT_TRUE(p.Open(port));
  ASSERT_EQ(ErrorCode(Login(p, secret_)), "ok");
  constexpr int kSets = 6;
  for (int i = 0; i < kSets; ++i) {
    ASSERT_EQ(ErrorCode(p.Call({{"op", "set"},
                                {"table", "t"},
                                {"key", "k" + std::to_string(i)},
                                {"value", {{"n", i}}}})),
              "ok");
  }

  const std::string answer = HttpGet(metrics, "/metrics");
  ASSERT_EQ(answer.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << answer;
  EXPECT_NE(answer.find("Content-Type: text/plain; version=0.0.4"), std::string::npos);
  EXPECT_NE(answer.find("Connection: close"), std::string::npos);
  const std::string page = Body(answer);
  EXPECT_EQ(Requests(page, "set", "ok"), kSets) << page;
  // Commit durability: each set waited for its own commit, so every one
  // is in a committed batch, and the two histograms count the same batches.
  for (const char* family : {"# TYPE skiff_commit_batch_writes histogram",
                             "# TYPE skiff_commit_duration_seconds histogram",
                             "# TYPE skiff_store_errors_total counter"}) {
    EXPECT_NE(page.find(family), std::string::npos) << family;
  }
  const double batches = SampleOf(page, "skiff_commit_batch_writes_count").value_or(0);
  EXPECT_GE(batches, 1);
  EXPECT_EQ(SampleOf(page, "skiff_commit_batches_total"), batches);
  EXPECT_EQ(SampleOf(page, "skiff_commit_batch_writes_bucket{le=\"+Inf\"}"), batches);
  EXPECT_EQ(SampleOf(page, "skiff_commit_duration_seconds_count"), batches);
  EXPECT_EQ(SampleOf(page, "skiff_commit_batch_writes_sum"),
            SampleOf(page, "skiff_commit_writes_total"));
  EXPECT_GE(SampleOf(page, "skiff_commit_batch_writes_sum").value_or(0), kSets);
  EXPECT_GT(SampleOf(page, "skiff_commit_duration_seconds_sum").value_or(0), 0);
  EXPECT_EQ(SampleOf(page, "skiff_store_errors_total{call=\"read\"}"), 0);
  EXPECT_EQ(SampleOf(page, "skiff_store_errors_total{call=\"write\"}"), 0);

  // The main port keeps the page to itself no more; /healthz stays.
  EXPECT_EQ(HttpGet(port, "/metrics").rfind("HTTP/1.1 404", 0), 0u);
  EXPECT_EQ(HttpGet(port, "/healthz").rfind("HTTP/1.1 200", 0), 0u);
  // The metrics port serves nothing else.
  EXPECT_EQ(HttpGet(metrics, "/healthz").rfind("HTTP/1.1 404", 0), 0u);
  {
    WsPeer post;
    ASSERT_TRUE(post.Connect(metrics));
    ASSERT_TRUE(post.SendRaw("POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n"));
    EXPECT_TRUE(post.WaitEnd());
    EXPECT_EQ(post.raw().rfind("HTTP/1.1 404", 0), 0u) << post.raw();
  }
  // Garbage: answered 400 at its first line, and closed.
  {
    WsPeer garbage;
    ASSERT_TRUE(garbage.Connect(metrics));
    ASSERT_TRUE(garbage.SendRaw(std::string("\x16\x03\x01\x02\x00 garbage\r\n\r\n", 18)));
    EXPECT_TRUE(garbage.WaitEnd());
    EXPECT_EQ(garbage.raw().rfind("HTTP/1.1 400", 0), 0u) << garbage.raw();
  }
  // A head over 8 KiB: 431 and closed, the rest unread.
  {
    WsPeer big;
    ASSERT_TRUE(big.Connect(metrics));
    ASSERT_TRUE(big.SendRaw("GET /metrics HTTP/1.1\r\nX-Filler: " + std::string(9000, 'a')));
    EXPECT_TRUE(big.WaitEnd());
    EXPECT_EQ(big.raw().rfind("HTTP/1.1 431", 0), 0u) << big.raw();
  }
  // A head that never ends: closed at the head deadline (5 s), unanswered.
  {
    WsPeer slow;
    ASSERT_TRUE(slow.Connect(metrics));
    ASSERT_TRUE(slow.SendRaw("GET /metrics HTTP/1.1\r\nHost: x\r\n"));
    EXPECT_TRUE(slow.WaitEnd(std::chrono::seconds(30)));
    EXPECT_EQ(slow.raw(), "");
  }

  // Both ports serve on.
  EXPECT_EQ(ErrorCode(p.Call({{"op", "get"}, {"table", "t"}, {"key", "k1"}})), "ok");
  const std::string again = HttpGet(metrics, "/metrics");
  ASSERT_EQ(again.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << again;
  EXPECT_EQ(Requests(Body(again), "get", "ok"), 1);
  ASSERT_OK(skiffd_.Stop());
}

TEST_F(MetricsTest, MetricsAddressThatCannotBeBoundStopsTheServer) {
  // Taken by the main listener of the same skiffd: refused, exit non-zero.
  const uint16_t port = FreePort();
  ASSERT_NE(port, 0);
  const std::string address = "127.0.0.1:" + std::to_string(port);
  Status started = skiffd_.Start(SKIFFD_PATH, {"--store=" + url_, "--port", std::to_string(port),
                                               "--metrics-address", address});
  EXPECT_FALSE(started.ok());
}

std::string FindPrometheus() {
  for (const char* path : {"/usr/bin/prometheus", "/usr/local/bin/prometheus"}) {
    if (::access(path, X_OK) == 0) return path;
  }
  return "";
}

TEST_F(MetricsTest, RealPrometheusScrapesTheRequestsMade) {
  const std::string prometheus = FindPrometheus();
  if (prometheus.empty()) {
    const char* ci = std::getenv("CI");
    ASSERT_FALSE(ci != nullptr && std::string(ci) == "true")
        << "prometheus is not installed (tools/setup installs it)";
    GTEST_SKIP() << "prometheus is not installed: apt-get install -y --no-install-recommends "
                    "prometheus (tools/setup does)";
  }
  const uint16_t port = Spawn();
  ASSERT_NE(port, 0);
  Peer p;
  ASSERT_TRUE(p.Open(port));
  ASSERT_EQ(ErrorCode(Login(p, secret_)), "ok");
  constexpr int kGets = 11;
  for (int i = 0; i < kGets; ++i) {
    ASSERT_EQ(ErrorCode(p.Call({{"op", "get"}, {"table", "t"}, {"key", "k"}})), "ok");
  }

  const std::filesystem::path config = dir_ / "prometheus.yml";
  {
    std::ofstream out(config);
    out << "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
        << "scrape_configs:\n  - job_name: skiffd\n    static_configs:\n"
        << "      - targets: ['127.0.0.1:" << port << "']\n";
  }
  const uint16_t web = FreePort();
  ASSERT_NE(web, 0);
  // Its log goes to a file: Go ends a program whose stderr is a closed pipe.
  // exec keeps the pid, so Stop signals Prometheus itself.
  const std::filesystem::path log = dir_ / "prometheus.log";
  support::Process server;
  ASSERT_OK(server.Start({"/bin/sh", "-c",
                          "exec \"$0\" --config.file=\"$1\" --web.listen-address=\"$2\" "
                          "--storage.tsdb.path=\"$3\" >\"$4\" 2>&1",
                          prometheus, config.string(), "127.0.0.1:" + std::to_string(web),
                          (dir_ / "tsdb").string(), log.string()}));

  // The first scrape lands a few seconds after start; 60 s is a hang guard.
  const std::string query =
      "/api/v1/query?query=skiff_requests_total%7Bop%3D%22get%22%2Coutcome%3D%22ok%22%7D";
  double seen = -1;
  std::string last;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    last = Body(HttpGet(web, query));
    const json answer = json::parse(last, nullptr, false);
    if (answer.is_object() && answer.value("status", "") == "success") {
      const json& result = answer["data"]["result"];
      if (result.is_array() && !result.empty()) {
        seen = std::stod(result[0]["value"][1].get<std::string>());
        EXPECT_EQ(result[0]["metric"].value("job", ""), "skiffd");
        break;
      }
    }
    std::this_thread::sleep_for(milliseconds(250));
  }
  if (seen != kGets) {
    std::ifstream in(log);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ADD_FAILURE() << "Prometheus saw " << seen << " gets, not " << kGets
                  << "; last answer: " << last << "\nits log:\n"
                  << text;
  }
  EXPECT_TRUE(server.Stop(std::chrono::seconds(10)).ok());
}

}  // namespace
}  // namespace skiff
