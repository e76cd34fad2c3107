// The C++ clients over wss://: the transport and the SDK against a Node
// https + ws echo server (another TLS stack than ours: OpenSSL in Node, with
// its own certificate handling), then the SDK and a device end to end
// against skiffd serving TLS. Certificates are made fresh per test
// (support/test_certs.h); every refusal is checked for its reason.
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "client/client.h"
#include "client/device.h"
#include "client/internal/transport.h"
#include "client/memory_storage.h"
#include "doc/document.h"
#include "server/users.h"
#include "store/store.h"
#include "support/process.h"
#include "support/skiffd_process.h"
#include "support/temp_dir.h"
#include "support/test_certs.h"

#include "test/status_matchers.h"

namespace skiff::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;

// A hang guard only: every wait below ends as soon as its event happens.
constexpr milliseconds kDeadline = seconds(20);

const std::string kNodeModules = std::string(SKIFF_SOURCE_DIR) + "/bench/peers/node_modules";
const std::string kEchoScript = std::string(SKIFF_SOURCE_DIR) + "/test/client/tls_echo_server.mjs";

// Why Node cannot run here, or empty.
std::string NodeMissing() {
  if (access("/usr/bin/node", X_OK) != 0) return "node is not at /usr/bin/node";
  if (access((kNodeModules + "/ws/package.json").c_str(), R_OK) != 0) {
    return "the ws package is not in bench/peers/node_modules (npm ci there)";
  }
  return "";
}

// tls_echo_server.mjs as a child process on two ephemeral ports.
class EchoServer {
 public:
  // Serves `cert` and `key`; `max_tls` caps the versions it speaks.
  Status Start(const std::string& cert, const std::string& key, const std::string& max_tls = "") {
    std::vector<std::string> argv = {"/usr/bin/node", kEchoScript, cert, key, kNodeModules};
    if (!max_tls.empty()) argv.push_back(max_tls);
    SKIFF_RETURN_IF_ERROR(process_.Start(argv, {}, support::Process::Output::kStdoutAndStderr));
    SKIFF_ASSIGN_OR_RETURN(std::string wss_line, process_.ReadLine(kDeadline));
    SKIFF_ASSIGN_OR_RETURN(std::string ws_line, process_.ReadLine(kDeadline));
    tls_port_ = support::PortOfListeningLine(wss_line);
    plain_port_ = support::PortOfListeningLine(ws_line);
    if (tls_port_ == 0 || plain_port_ == 0) {
      return Unavailable("the echo server said '" + wss_line + "' / '" + ws_line + "'");
    }
    return Status::Ok();
  }
  uint16_t tls_port() const { return tls_port_; }
  uint16_t plain_port() const { return plain_port_; }

 private:
  support::Process process_;  // ends the child when the test does
  uint16_t tls_port_ = 0;
  uint16_t plain_port_ = 0;
};

// What one transport connection reported, in order: "open", "text:...",
// "binary:...", "close:REASON".
class Events {
 public:
  client::internal::TransportHandlers Handlers() {
    client::internal::TransportHandlers h;
    h.on_open = [this] { Push("open"); };
    h.on_message = [this](std::string_view payload, bool binary) {
      Push((binary ? "binary:" : "text:") + std::string(payload));
    };
    h.on_close = [this](const std::string& reason) { Push("close:" + reason); };
    return h;
  }
  // The next event; "timeout" when none came within the deadline.
  std::string Next() {
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_for(lock, kDeadline, [this] { return !events_.empty(); })) return "timeout";
    std::string e = std::move(events_.front());
    events_.pop_front();
    return e;
  }

 private:
  void Push(std::string e) {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back(std::move(e));
    cv_.notify_all();
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> events_;
};

client::internal::TransportTls Trusting(const std::string& ca_file) {
  return {.enabled = true, .ca_file = ca_file, .insecure = false};
}

// Connect()'s failure message, or "connected" when it succeeded.
std::string ConnectFailure(const client::ClientOptions& o) {
  auto c = client::Client::Connect(o);
  if (c.ok()) return "connected";
  EXPECT_EQ(c.status().code(), StatusCode::kUnavailable) << c.status().ToString();
  EXPECT_TRUE(client::IsTransportFailure(c.status())) << c.status().ToString();
  return c.status().message();
}

class TlsEchoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string missing = NodeMissing(); !missing.empty()) GTEST_SKIP() << missing;
    certs_ = support::WriteTestCertificates(dir_.path().string());
  }

  // Starts the echo server on `cert` (the leaf's key); false on failure.
  bool Serve(const std::string& cert, const std::string& max_tls = "") {
    Status started = server_.Start(cert, certs_.key, max_tls);
    EXPECT_OK(started);
    return started.ok();
  }

  client::ClientOptions Options(const std::string& host, const std::string& ca_file) {
    client::ClientOptions o;
    o.host = host;
    o.port = server_.tls_port();
    o.tls = true;
    o.tls_ca_file = ca_file;
    o.reconnect = false;
    o.connect_timeout = kDeadline;
    o.request_timeout = kDeadline;
    return o;
  }

  support::TempDir dir_;
  support::TestCertFiles certs_;
  EchoServer server_;
};

TEST_F(TlsEchoTest, TransportEchoesTextAndBinaryOverTls) {
  ASSERT_TRUE(Serve(certs_.cert));
  auto transport = client::internal::Transport::Create();
  Events events;
  auto conn =
      transport->Open("127.0.0.1", server_.tls_port(), Trusting(certs_.ca), events.Handlers());
  ASSERT_EQ(events.Next(), "open");
  ASSERT_TRUE(conn->SendText("over tls"));
  EXPECT_EQ(events.Next(), "text:over tls");
  const std::string bytes("\x00\x01\xff", 3);
  ASSERT_TRUE(conn->SendBinary(bytes));
  EXPECT_EQ(events.Next(), "binary:" + bytes);
  conn->Close();
  EXPECT_THAT(events.Next(), HasSubstr("close:"));
  transport->Shutdown();
}

TEST_F(TlsEchoTest, OneTransportHoldsPlainAndTlsConnections) {
  ASSERT_TRUE(Serve(certs_.cert));
  auto transport = client::internal::Transport::Create();
  Events secure, plain;
  auto tls_conn =
      transport->Open("127.0.0.1", server_.tls_port(), Trusting(certs_.ca), secure.Handlers());
  auto plain_conn = transport->Open("127.0.0.1", server_.plain_port(), {}, plain.Handlers());
  ASSERT_EQ(secure.Next(), "open");
  ASSERT_EQ(plain.Next(), "open");
  ASSERT_TRUE(tls_conn->SendText("a"));
  ASSERT_TRUE(plain_conn->SendText("b"));
  EXPECT_EQ(secure.Next(), "text:a");
  EXPECT_EQ(plain.Next(), "text:b");
  // Closing one kind leaves the other open.
  tls_conn->Close();
  EXPECT_THAT(secure.Next(), HasSubstr("close:"));
  ASSERT_TRUE(plain_conn->SendText("c"));
  EXPECT_EQ(plain.Next(), "text:c");
  plain_conn->Close();
  EXPECT_THAT(plain.Next(), HasSubstr("close:"));
  transport->Shutdown();
}

TEST_F(TlsEchoTest, ClientConnectsByNameAndByAddress) {
  ASSERT_TRUE(Serve(certs_.cert));
  for (const std::string host : {"localhost", "127.0.0.1"}) {
    auto c = client::Client::Connect(Options(host, certs_.ca));
    ASSERT_OK(c) << host;
    auto echoed = (*c)->Echo({{"via", host}});
    ASSERT_OK(echoed) << host;
    EXPECT_EQ(*echoed, (doc::Value{{"via", host}})) << host;
    EXPECT_GT((*c)->wire_counters().frames_received, 0u);
  }
}

TEST_F(TlsEchoTest, UntrustedRootIsRefusedWithTheReason) {
  ASSERT_TRUE(Serve(certs_.cert));
  EXPECT_THAT(ConnectFailure(Options("127.0.0.1", certs_.other_ca)),
              HasSubstr("certificate verify failed: unable to get local issuer certificate"));
}

TEST_F(TlsEchoTest, SystemStoreDoesNotTrustTheTestRoot) {
  ASSERT_TRUE(Serve(certs_.cert));
  EXPECT_THAT(ConnectFailure(Options("localhost", "")),
              HasSubstr("certificate verify failed: unable to get local issuer certificate"));
}

TEST_F(TlsEchoTest, NameOrAddressNotInTheCertificateIsRefused) {
  ASSERT_TRUE(Serve(certs_.wrong_host));  // example.invalid, signed by the trusted root
  EXPECT_THAT(ConnectFailure(Options("localhost", certs_.ca)),
              HasSubstr("certificate verify failed: hostname mismatch"));
  EXPECT_THAT(ConnectFailure(Options("127.0.0.1", certs_.ca)),
              HasSubstr("certificate verify failed: IP address mismatch"));
}

TEST_F(TlsEchoTest, InsecureConnectsToAnUntrustedServer) {
  ASSERT_TRUE(Serve(certs_.wrong_host));
  client::ClientOptions o = Options("127.0.0.1", certs_.other_ca);
  o.tls_insecure = true;
  auto c = client::Client::Connect(o);
  ASSERT_OK(c);
  auto echoed = (*c)->Echo("unchecked");
  ASSERT_OK(echoed);
  EXPECT_EQ(*echoed, "unchecked");
}

TEST_F(TlsEchoTest, UnreadableCaFileIsNamed) {
  ASSERT_TRUE(Serve(certs_.cert));
  const std::string missing = dir_.File("no-such-ca.pem");
  EXPECT_THAT(ConnectFailure(Options("127.0.0.1", missing)),
              HasSubstr("cannot load the CA file '" + missing + "'"));
  // A PEM file that holds no certificate (a key) is refused the same way.
  EXPECT_THAT(ConnectFailure(Options("127.0.0.1", certs_.other_key)),
              HasSubstr("cannot load the CA file"));
}

TEST_F(TlsEchoTest, ServerBelowTls12IsRefused) {
  ASSERT_TRUE(Serve(certs_.cert, "TLSv1.1"));
  EXPECT_THAT(ConnectFailure(Options("127.0.0.1", certs_.ca)),
              HasSubstr("the server refused the TLS handshake: protocol version"));
}

TEST_F(TlsEchoTest, PlainClientOnTheTlsPortFailsWithoutHanging) {
  ASSERT_TRUE(Serve(certs_.cert));
  client::ClientOptions o = Options("127.0.0.1", "");
  o.tls = false;
  EXPECT_NE(ConnectFailure(o), "connected");
}

// skiffd with --tls-cert/--tls-key, started as a child on an ephemeral port
// with its own SQLite file.
class TlsSkiffdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    certs_ = support::WriteTestCertificates(dir_.path().string());
    url_ = "sqlite:" + dir_.File("skiff.db");
    auto store = store::OpenStore(url_);
    ASSERT_OK(store);
    auto ops = server::CreateUser(**store, "ops", server::Permissions({"*"}, {"*"}));
    ASSERT_OK(ops);
    ops_secret_ = *ops;
    auto ann = server::CreateUser(**store, "ann", server::Permissions());
    ASSERT_OK(ann);
    ann_secret_ = *ann;
    ASSERT_OK(server::CreateGroup(**store, "team"));
    ASSERT_OK(server::GrantGroup(**store, "ann", "team"));
  }

  // Starts skiffd serving `cert` (the leaf's key); false on failure.
  bool Serve(const std::string& cert) {
    Status started = skiffd_.Start(SKIFFD_PATH, {"--store=" + url_, "--io-threads", "1",
                                                 "--tls-cert", cert, "--tls-key", certs_.key});
    EXPECT_OK(started);
    return started.ok();
  }

  client::ClientOptions Ops(const std::string& host, const std::string& ca_file) {
    client::ClientOptions o;
    o.host = host;
    o.port = skiffd_.port();
    o.tls = true;
    o.tls_ca_file = ca_file;
    o.user = "ops";
    o.secret = ops_secret_;
    o.reconnect = false;
    o.connect_timeout = kDeadline;
    o.request_timeout = kDeadline;
    return o;
  }

  client::DeviceOptions Ann(const std::string& device_id) {
    client::DeviceOptions o;
    o.port = skiffd_.port();
    o.tls = true;
    o.tls_ca_file = certs_.ca;
    o.user = "ann";
    o.secret = ann_secret_;
    o.device_id = device_id;
    o.backoff_min = milliseconds(10);
    o.backoff_max = milliseconds(200);
    return o;
  }

  support::TempDir dir_;
  support::TestCertFiles certs_;
  std::string url_;
  std::string ops_secret_;
  std::string ann_secret_;
  support::SkiffdProcess skiffd_;  // after dir_: stops before its files go
};

TEST_F(TlsSkiffdTest, LogsInWritesAndReadsOverWss) {
  ASSERT_TRUE(Serve(certs_.cert));
  for (const std::string host : {"127.0.0.1", "localhost"}) {
    auto c = client::Client::Connect(Ops(host, certs_.ca));
    ASSERT_OK(c) << host;
    ASSERT_OK((*c)->Set("notes", host, {{"over", "wss"}})) << host;
    auto got = (*c)->Get("notes", host);
    ASSERT_OK(got) << host;
    ASSERT_TRUE(got->has_value()) << host;
    EXPECT_EQ(**got, (doc::Value{{"over", "wss"}})) << host;
  }
  // The first client's write, read back by a second connection.
  auto c = client::Client::Connect(Ops("127.0.0.1", certs_.ca));
  ASSERT_OK(c);
  auto first = (*c)->Get("notes", "127.0.0.1");
  ASSERT_OK(first);
  EXPECT_TRUE(first->has_value());
}

TEST_F(TlsSkiffdTest, RefusesAnUntrustedRootAndNamesTheReason) {
  ASSERT_TRUE(Serve(certs_.cert));
  EXPECT_THAT(ConnectFailure(Ops("127.0.0.1", certs_.other_ca)),
              HasSubstr("certificate verify failed: unable to get local issuer certificate"));
}

TEST_F(TlsSkiffdTest, RefusesACertificateForAnotherHost) {
  ASSERT_TRUE(Serve(certs_.wrong_host));
  EXPECT_THAT(ConnectFailure(Ops("localhost", certs_.ca)),
              HasSubstr("certificate verify failed: hostname mismatch"));
  EXPECT_THAT(ConnectFailure(Ops("127.0.0.1", certs_.ca)),
              HasSubstr("certificate verify failed: IP address mismatch"));
}

TEST_F(TlsSkiffdTest, InsecureConnectsToAnUntrustedServer) {
  ASSERT_TRUE(Serve(certs_.wrong_host));
  client::ClientOptions o = Ops("127.0.0.1", certs_.other_ca);
  o.tls_insecure = true;
  auto c = client::Client::Connect(o);
  ASSERT_OK(c);
  EXPECT_OK((*c)->Ping());
}

TEST_F(TlsSkiffdTest, PlainClientIsNotServed) {
  ASSERT_TRUE(Serve(certs_.cert));
  client::ClientOptions o = Ops("127.0.0.1", "");
  o.tls = false;
  EXPECT_NE(ConnectFailure(o), "connected");
}

TEST_F(TlsSkiffdTest, DevicesSyncOverWss) {
  ASSERT_TRUE(Serve(certs_.cert));
  const client::RowName row{"team", "t", "k"};
  client::MemoryStorage phone_storage;
  auto phone = client::Device::Open(Ann("phone"), phone_storage);
  ASSERT_OK(phone);
  ASSERT_OK((*phone)->Put(row, {{"from", "phone"}}));
  ASSERT_OK((*phone)->WaitUntilSynced(kDeadline)) << (*phone)->last_error();
  EXPECT_EQ((*phone)->outbox_size(), 0u);

  client::MemoryStorage laptop_storage;
  auto laptop = client::Device::Open(Ann("laptop"), laptop_storage);
  ASSERT_OK(laptop);
  ASSERT_OK((*laptop)->WaitUntilUpToDate(kDeadline)) << (*laptop)->last_error();
  EXPECT_EQ((*laptop)->Get(row), R"({"from":"phone"})");

  // A device that does not trust the server stays offline and says why.
  client::DeviceOptions untrusting = Ann("tablet");
  untrusting.tls_ca_file = certs_.other_ca;
  client::MemoryStorage tablet_storage;
  auto tablet = client::Device::Open(untrusting, tablet_storage);
  ASSERT_OK(tablet);
  // Its loop records the failed round; the deadline only guards a hang.
  Status why;
  for (auto until = std::chrono::steady_clock::now() + kDeadline;
       why.ok() && std::chrono::steady_clock::now() < until;) {
    std::this_thread::sleep_for(milliseconds(5));
    why = (*tablet)->last_error();
  }
  EXPECT_THAT(why.message(), HasSubstr("certificate verify failed"));
  EXPECT_EQ((*tablet)->state(), client::SyncState::kOffline);
  EXPECT_EQ((*tablet)->row_count(), 0u);
}

}  // namespace
}  // namespace skiff::testing
