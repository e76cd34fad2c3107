// The load driver over wss:// against a skiffd child serving TLS: the
// pipelined (Asio stream) and the sequential (OpenSSL on the descriptor)
// modes answer every request, and a certificate the driver must not trust
// (another root, another name) ends the connect with the reason, never a
// run. ParseWsUrl takes wss:// urls.
#include <chrono>
#include <string>

#include <gtest/gtest.h>

#include "support/e2e_options.h"
#include "support/process.h"
#include "support/stack.h"
#include "support/temp_dir.h"
#include "support/test_certs.h"

#include "test/status_matchers.h"

namespace skiff::bench {
namespace {

using std::chrono::milliseconds;

// echo of a per-request value; every reply must carry it back.
class Echoes final : public Workload {
 public:
  bool Next(size_t conn, size_t slot, std::string& body) override {
    body += "\"op\":\"echo\",\"data\":\"" + Key(conn, slot) + "\"";
    return true;
  }
  std::string Check(size_t conn, size_t slot, const ReplyView& reply) override {
    if (LastReplyMember(reply.text, "data") != "\"" + Key(conn, slot) + "\"") return "other data";
    return {};
  }

 private:
  static std::string Key(size_t conn, size_t slot) {
    return "c" + std::to_string(conn) + "s" + std::to_string(slot);
  }
};

std::unique_ptr<Stack> StartTlsChild() {
  StackOptions options;
  options.store = "sqlite";
  options.server = "child-tls";
  auto stack = Stack::Start(options);
  EXPECT_OK(stack);
  return stack.ok() ? std::move(*stack) : nullptr;
}

RunResult Echo(LoadDriver& driver, uint64_t ops, double rate = 0) {
  Echoes echoes;
  RunLimits limits;
  limits.max_ops = ops;
  limits.rate = rate;
  limits.cap = std::chrono::seconds(60);
  return driver.Run(echoes, limits);
}

TEST(DriverTlsTest, PipelinedAndSequentialPoolsAreAnsweredOverWss) {
  auto stack = StartTlsChild();
  ASSERT_NE(stack, nullptr);
  EXPECT_TRUE(stack->tls());
  EXPECT_TRUE(stack->Target().tls);
  auto pipelined = stack->Connect(4, 8, milliseconds(10000));
  ASSERT_OK(pipelined);
  const RunResult p = Echo(**pipelined, 2000);
  EXPECT_EQ(p.ops, 2000u);
  EXPECT_EQ(p.error_count(), 0u) << p.first_error;
  auto sequential = stack->Connect(1, 1, milliseconds(10000));
  ASSERT_OK(sequential);
  const RunResult s = Echo(**sequential, 300);
  EXPECT_EQ(s.ops, 300u);
  EXPECT_EQ(s.error_count(), 0u) << s.first_error;
  // No event loop runs a sequential TLS connection, so no open loop either.
  const RunResult open = Echo(**sequential, 10, 1000);
  EXPECT_EQ(open.ops, 0u);
  EXPECT_EQ(open.errors_of(ErrorKind::kProtocol), 1u);
  EXPECT_NE(open.first_error.find("open-loop"), std::string::npos) << open.first_error;
}

TEST(DriverTlsTest, AnotherRootIsRefusedUnlessInsecure) {
  auto stack = StartTlsChild();
  ASSERT_NE(stack, nullptr);
  support::TempDir dir;
  const support::TestCertFiles other = support::WriteTestCertificates(dir.path().string());
  for (size_t connections : {1, 2}) {  // sequential and event-loop handshakes
    DriverOptions o = stack->Target();
    o.connections = connections;
    o.pipeline = 1;
    o.tls_ca = other.other_ca;
    auto driver = LoadDriver::Connect(o);
    ASSERT_FALSE(driver.ok());
    EXPECT_NE(driver.status().message().find("certificate rejected"), std::string::npos)
        << driver.status().ToString();
    o.insecure = true;
    auto anyway = LoadDriver::Connect(o);
    ASSERT_OK(anyway);
    EXPECT_EQ(Echo(**anyway, 20).error_count(), 0u);
  }
}

TEST(DriverTlsTest, ACertificateForAnotherNameIsRefused) {
  support::TempDir dir;
  const support::TestCertFiles certs = support::WriteTestCertificates(dir.path().string());
  support::Process child;
  ASSERT_OK(child.Start({SKIFFD_PATH, "--store=sqlite:" + dir.File("s.db"), "--address=127.0.0.1",
                         "--port=0", "--tls-cert=" + certs.wrong_host, "--tls-key=" + certs.key},
                        {}));
  Result<std::string> line = child.ReadLine(std::chrono::seconds(30));
  ASSERT_OK(line);
  child.CloseOutput();
  DriverOptions o;
  o.port = support::PortOfListeningLine(*line);
  ASSERT_NE(o.port, 0) << *line;
  o.tls = true;
  o.tls_ca = certs.ca;
  for (const char* host : {"127.0.0.1", "localhost"}) {
    o.host = host;
    auto driver = LoadDriver::Connect(o);
    ASSERT_FALSE(driver.ok()) << host;
    EXPECT_NE(driver.status().message().find("mismatch"), std::string::npos)
        << driver.status().ToString();
  }
  Result<int> stopped = child.Stop(std::chrono::seconds(30));
  ASSERT_OK(stopped);
}

TEST(DriverTlsTest, ParseWsUrlTakesWss) {
  std::string host;
  uint16_t port = 0;
  bool tls = false;
  ASSERT_TRUE(ParseWsUrl("wss://db.example:7421/", &host, &port, &tls));
  EXPECT_EQ(host, "db.example");
  EXPECT_EQ(port, 7421);
  EXPECT_TRUE(tls);
  ASSERT_TRUE(ParseWsUrl("ws://[::1]:7420", &host, &port, &tls));
  EXPECT_EQ(host, "::1");
  EXPECT_FALSE(tls);
  EXPECT_FALSE(ParseWsUrl("https://h:1", &host, &port, &tls));
  EXPECT_FALSE(ParseWsUrl("wss://::1:7420", &host, &port, &tls));
  EXPECT_FALSE(ParseWsUrl("wss://h:0", &host, &port, &tls));
}

}  // namespace
}  // namespace skiff::bench
