// skiffd's wss:// port against real clients: OpenSSL's own s_client, a Node
// `ws` client (tls_ws_client.mjs), and TLS clients written here with the
// OpenSSL API for what a well-behaved client never sends. Certificates are
// made fresh per test (support/test_certs.h). skiffd runs as a child.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <nlohmann/json.hpp>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "server/users.h"
#include "store/store.h"
#include "support/process.h"
#include "support/temp_dir.h"
#include "support/test_certs.h"

#include "test/status_matchers.h"

namespace skiff {
namespace {

using json = nlohmann::json;
using std::chrono::seconds;

::testing::AssertionResult Contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << part << "\" not in:\n" << text;
}

// ---- A TLS client of our own ----------------------------------------------

// A blocking TCP connection to 127.0.0.1:port whose reads give up after 10 s
// (a hang guard, never a synchronisation).
int Dial(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  timeval guard{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &guard, sizeof guard);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &guard, sizeof guard);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(port);
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Reads until the server closes the connection (or the guard runs out:
// then false). What it read is dropped.
bool ServerCloses(int fd) {
  char buffer[4096];
  for (int reads = 0; reads < 10'000; ++reads) {
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n == 0) return true;
    if (n < 0) return errno == ECONNRESET;  // EAGAIN: the guard ran out
  }
  return false;
}

struct TlsClient {
  SSL_CTX* ctx = nullptr;
  SSL* ssl = nullptr;
  int fd = -1;

  // min/max: protocol versions the client offers; 0 = OpenSSL's default.
  TlsClient(const std::string& ca_file, int min_version = 0, int max_version = 0) {
    ctx = SSL_CTX_new(TLS_client_method());
    SSL_CTX_load_verify_locations(ctx, ca_file.c_str(), nullptr);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
    if (min_version != 0 || max_version != 0) {
      // TLS 1.0 and 1.1 need security level 0 in OpenSSL 3 even to be
      // offered: the point is that the server refuses them.
      SSL_CTX_set_security_level(ctx, 0);
      SSL_CTX_set_min_proto_version(ctx, min_version);
      SSL_CTX_set_max_proto_version(ctx, max_version);
    }
  }
  ~TlsClient() {
    if (ssl != nullptr) SSL_free(ssl);
    if (fd >= 0) ::close(fd);
    SSL_CTX_free(ctx);
  }

  // TCP connect and the TLS handshake, with the name checked.
  bool Connect(uint16_t port) {
    fd = Dial(port);
    if (fd < 0) return false;
    ssl = SSL_new(ctx);
    SSL_set_fd(ssl, fd);
    SSL_set_tlsext_host_name(ssl, "localhost");
    SSL_set1_host(ssl, "localhost");
    ERR_clear_error();
    return SSL_connect(ssl) == 1;
  }

  bool Write(const std::string& bytes) {
    return SSL_write(ssl, bytes.data(), static_cast<int>(bytes.size())) ==
           static_cast<int>(bytes.size());
  }

  // Everything until the server ends the session.
  std::string ReadAll() {
    std::string all;
    char buffer[4096];
    for (int reads = 0; reads < 10'000; ++reads) {
      const int n = SSL_read(ssl, buffer, sizeof buffer);
      if (n <= 0) break;
      all.append(buffer, static_cast<size_t>(n));
    }
    return all;
  }
};

std::string HealthzRequest() { return "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n"; }

std::string RandomBytes(std::mt19937& rng, size_t n) {
  std::string bytes(n, '\0');
  for (char& c : bytes) c = static_cast<char>(rng() & 0xff);
  return bytes;
}

// ---- The fixture -----------------------------------------------------------

class TlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    certs_ = support::WriteTestCertificates(dir_.path().string());
    url_ = "sqlite:" + dir_.File("skiff.db");
    auto store = store::OpenStore(url_);
    ASSERT_OK(store);
    auto created = server::CreateUser(**store, "ops", server::Permissions({"*"}, {"*"}));
    ASSERT_OK(created);
    secret_ = *created;
  }

  // skiffd serving the test pair; its stderr comes with its stdout, so the
  // test can wait for its log lines.
  void Spawn(std::vector<std::string> extra = {}) {
    std::vector<std::string> argv = {
        SKIFFD_PATH, "--store=" + url_, "--port",    "0",         "--io-threads",
        "1",         "--tls-cert",      certs_.cert, "--tls-key", certs_.key};
    argv.insert(argv.end(), extra.begin(), extra.end());
    ASSERT_OK(skiffd_.Start(argv, {}, support::Process::Output::kStdoutAndStderr));
    for (int lines = 0; lines < 50 && port_ == 0; ++lines) {
      auto line = skiffd_.ReadLine(seconds(20));
      ASSERT_OK(line);
      if (line->rfind("skiffd listening on", 0) == 0) {
        port_ = support::PortOfListeningLine(*line);
        EXPECT_TRUE(Contains(*line, "scheme=wss"));
      }
    }
    ASSERT_NE(port_, 0);
  }

  // Reads skiffd's output until a line holding `text` (false when it ends
  // first or falls silent for 20 s).
  bool WaitForLog(const std::string& text) {
    for (int lines = 0; lines < 1000; ++lines) {
      auto line = skiffd_.ReadLine(seconds(20));
      if (!line.ok()) return false;
      if (line->find(text) != std::string::npos) return true;
    }
    return false;
  }

  // tls_ws_client.mjs in `mode` against the server, as user ops; its exit
  // status, with its output in *out.
  Result<int> RunNodeClient(const std::string& mode, std::string* out) {
    return support::RunToEnd(
        {SKIFF_NODE, SKIFF_TLS_CLIENT_SCRIPT, SKIFF_JS_MODULES,
         "wss://127.0.0.1:" + std::to_string(port_) + "/", certs_.ca, "ops", secret_, mode},
        out);
  }

  // GET /healthz over TLS with the test CA: the body, or "" on failure.
  std::string Healthz() {
    TlsClient c(certs_.ca);
    if (!c.Connect(port_) || !c.Write(HealthzRequest())) return "";
    return c.ReadAll();
  }

  // skiffd started with `flags` (no test pair) must refuse to start: its
  // exit status and what it said.
  std::pair<int, std::string> Refusal(const std::vector<std::string>& flags) {
    std::vector<std::string> argv = {SKIFFD_PATH, "--store=" + url_, "--port", "0"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    support::Process p;
    EXPECT_OK(p.Start(argv, {}, support::Process::Output::kStdoutAndStderr));
    std::string said;
    for (int lines = 0; lines < 50; ++lines) {
      auto line = p.ReadLine(seconds(20));
      if (!line.ok()) break;
      if (line->rfind("skiffd listening on", 0) == 0) {
        p.Kill();
        return {-1, "started: " + *line};
      }
      said += *line + "\n";
    }
    auto status = p.Wait();
    return {status.ok() ? *status : -2, said};
  }

  std::string Write(const std::string& name, const std::string& content) {
    const std::string path = dir_.File(name);
    std::ofstream(path) << content;
    return path;
  }

  support::TempDir dir_;
  support::TestCertFiles certs_;
  std::string url_;
  std::string secret_;
  support::Process skiffd_;
  uint16_t port_ = 0;
};

// ---- Starting --------------------------------------------------------------

TEST_F(TlsTest, RefusesToStartWithABadPairAndSaysWhich) {
  const std::string not_pem = Write("not.pem", "this is not PEM\n");
  const std::string encrypted = dir_.File("encrypted_key.pem");
  auto made = support::RunToEnd(
      {"/bin/sh", "-c",
       "openssl pkey -in " + certs_.key + " -aes256 -passout pass:secret -out " + encrypted});
  ASSERT_OK(made);
  ASSERT_EQ(*made, 0);
  struct Case {
    std::vector<std::string> flags;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"--tls-cert", dir_.File("missing.pem"), "--tls-key", certs_.key},
       "cannot read --tls-cert " + dir_.File("missing.pem") + ": No such file or directory"},
      {{"--tls-cert", certs_.cert, "--tls-key", certs_.cert + "/key.pem"},
       "cannot read --tls-key " + certs_.cert + "/key.pem: Not a directory"},
      {{"--tls-cert", not_pem, "--tls-key", certs_.key},
       "--tls-cert " + not_pem + " holds no usable PEM certificate"},
      {{"--tls-cert", certs_.cert, "--tls-key", not_pem},
       "--tls-key " + not_pem + " holds no usable PEM private key"},
      {{"--tls-cert", certs_.cert, "--tls-key", certs_.other_key},
       "--tls-key " + certs_.other_key + " does not match the certificate in --tls-cert " +
           certs_.cert},
      {{"--tls-cert", certs_.expired, "--tls-key", certs_.key},
       "the certificate in --tls-cert " + certs_.expired + " (/CN=localhost) expired on"},
      {{"--tls-cert", certs_.cert, "--tls-key", encrypted},
       "--tls-key " + encrypted + " is encrypted; skiffd takes an unencrypted key"},
      {{"--tls-cert", certs_.cert}, "--tls-key names no file"},
      {{"--tls-key", certs_.key}, "--tls-cert names no file"},
  };
  for (const Case& c : cases) {
    const auto [status, said] = Refusal(c.flags);
    EXPECT_EQ(status, 64) << said;
    EXPECT_TRUE(Contains(said, c.says));
  }
}

// ---- Real clients ----------------------------------------------------------

TEST_F(TlsTest, OpensslSClientGetsHealthzOverTls12And13WithTheChainVerified) {
  Spawn();
  for (const char* version : {"-tls1_2", "-tls1_3"}) {
    std::string out;
    const std::string command =
        "printf 'GET /healthz HTTP/1.1\\r\\nHost: localhost\\r\\n\\r\\n' | "
        "openssl s_client -quiet -verify_return_error -CAfile " +
        certs_.ca + " -verify_hostname localhost " + version +
        " -connect 127.0.0.1:" + std::to_string(port_) + " 2>&1";
    auto status = support::RunToEnd({"/bin/sh", "-c", command}, &out);
    ASSERT_OK(status);
    EXPECT_EQ(*status, 0) << version << ": " << out;
    // The CA file holds only the root: verification passes because the
    // server sends its intermediate after its own certificate.
    EXPECT_TRUE(Contains(out, "HTTP/1.1 200")) << version;
  }
  // A client that trusts another root is refused by its own check.
  std::string out;
  const std::string untrusted = "printf '' | openssl s_client -verify_return_error -CAfile " +
                                certs_.other_ca + " -connect 127.0.0.1:" + std::to_string(port_) +
                                " 2>&1";
  auto status = support::RunToEnd({"/bin/sh", "-c", untrusted}, &out);
  ASSERT_OK(status);
  EXPECT_NE(*status, 0) << out;
  EXPECT_TRUE(Contains(out, "verify error"));
}

TEST_F(TlsTest, NodeWsClientLogsInWritesAndReadsOverWss) {
  Spawn();
  std::string out;
  auto status = RunNodeClient("once", &out);
  ASSERT_OK(status);
  ASSERT_EQ(*status, 0) << out;
  const json result = json::parse(out);
  EXPECT_EQ(result["value"], json({{"over", "tls"}})) << out;
  EXPECT_EQ(result["bigSame"], true) << out;
}

// A reset while a large reply is being written ends that connection only
// (OpenSSL's own socket writes would raise SIGPIPE and end the process).
TEST_F(TlsTest, AClientResettingMidReplyCostsOnlyItsConnection) {
  Spawn();
  std::string out;
  auto status = RunNodeClient("reset", &out);
  ASSERT_OK(status);
  EXPECT_EQ(*status, 0) << out;
  EXPECT_TRUE(Contains(Healthz(), "200 OK"));
}

TEST_F(TlsTest, OnlyTls12AndNewerAreServed) {
  Spawn();
  {
    TlsClient old(certs_.ca, TLS1_VERSION, TLS1_1_VERSION);
    EXPECT_FALSE(old.Connect(port_));
  }
  for (int version : {TLS1_2_VERSION, TLS1_3_VERSION}) {
    TlsClient c(certs_.ca, version, version);
    ASSERT_TRUE(c.Connect(port_)) << version;
    EXPECT_EQ(SSL_version(c.ssl), version);
    ASSERT_TRUE(c.Write(HealthzRequest()));
    EXPECT_TRUE(Contains(c.ReadAll(), "200 OK"));
  }
}

// ---- Hostile bytes -----------------------------------------------------------

TEST_F(TlsTest, GarbageBeforeInsideAndAfterTheHandshakeGetsACleanClose) {
  Spawn({"--handshake-timeout-ms", "500"});
  std::mt19937 rng(20261203);
  // Plain HTTP and a plain WebSocket upgrade on the TLS port.
  for (const std::string& plain :
       {HealthzRequest(),
        std::string("GET / HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\n"
                    "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                    "Sec-WebSocket-Version: 13\r\n\r\n")}) {
    const int fd = Dial(port_);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::send(fd, plain.data(), plain.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(plain.size()));
    EXPECT_TRUE(ServerCloses(fd));
    ::close(fd);
  }
  for (int round = 0; round < 12; ++round) {
    const size_t size = size_t{1} << (round % 6 * 3);  // 1 B to 32 KiB
    // Before: random bytes where a ClientHello belongs.
    {
      const int fd = Dial(port_);
      ASSERT_GE(fd, 0);
      const std::string bytes = RandomBytes(rng, size);
      ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      EXPECT_TRUE(ServerCloses(fd)) << "before, " << size;
      ::close(fd);
    }
    // Inside: a real ClientHello, then random bytes instead of the rest.
    {
      TlsClient c(certs_.ca);
      c.ssl = SSL_new(c.ctx);
      // Memory BIOs: the hello is made without a socket, and the handshake
      // stops where it would wait for the server's answer.
      BIO* in = BIO_new(BIO_s_mem());
      BIO* out = BIO_new(BIO_s_mem());
      SSL_set_bio(c.ssl, in, out);
      ASSERT_EQ(SSL_get_error(c.ssl, SSL_connect(c.ssl)), SSL_ERROR_WANT_READ);
      char* hello = nullptr;
      const long hello_size = BIO_get_mem_data(out, &hello);
      ASSERT_GT(hello_size, 0);
      c.fd = Dial(port_);
      ASSERT_GE(c.fd, 0);
      const std::string bytes =
          std::string(hello, static_cast<size_t>(hello_size)) + RandomBytes(rng, size);
      ::send(c.fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      EXPECT_TRUE(ServerCloses(c.fd)) << "inside, " << size;
    }
    // After: a finished handshake, then random bytes as if they were records.
    {
      TlsClient c(certs_.ca);
      ASSERT_TRUE(c.Connect(port_));
      const std::string bytes = RandomBytes(rng, size);
      ::send(c.fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      EXPECT_TRUE(ServerCloses(c.fd)) << "after, " << size;
    }
  }
  // A connection that starts a hello and stops is ended by the deadline.
  {
    const int fd = Dial(port_);
    ASSERT_GE(fd, 0);
    const char partial[] = {0x16, 0x03, 0x01, 0x02, 0x00, 0x01};
    ::send(fd, partial, sizeof partial, MSG_NOSIGNAL);
    EXPECT_TRUE(ServerCloses(fd));
    ::close(fd);
  }
  EXPECT_TRUE(Contains(Healthz(), "200 OK"));
}

// ---- SIGHUP ------------------------------------------------------------------

TEST_F(TlsTest, SighupReloadsTheCertificateUnderLoadWithNoConnectionDropped) {
  // The pair the server will move to: another root, another leaf.
  support::TempDir next_dir;
  const support::TestCertFiles next = support::WriteTestCertificates(next_dir.path().string());
  // Served from copies, so the test can replace them.
  const std::string cert = dir_.File("served_cert.pem");
  const std::string key = dir_.File("served_key.pem");
  std::filesystem::copy_file(certs_.cert, cert);
  std::filesystem::copy_file(certs_.key, key);
  certs_.cert = cert;
  certs_.key = key;
  Spawn();
  std::ifstream a(certs_.ca), b(next.ca);
  const std::string both_roots =
      Write("both_roots.pem", std::string(std::istreambuf_iterator<char>(a), {}) +
                                  std::string(std::istreambuf_iterator<char>(b), {}));

  support::Process client;
  ASSERT_OK(client.Start({SKIFF_NODE, SKIFF_TLS_CLIENT_SCRIPT, SKIFF_JS_MODULES,
                          "wss://127.0.0.1:" + std::to_string(port_) + "/", both_roots, "ops",
                          secret_, "reload", "20", next.cert}));
  auto ready = client.ReadLine(seconds(30));
  ASSERT_OK(ready);
  ASSERT_EQ(*ready, "ready");

  // A bad pair first: the key of another certificate. The old pair stays.
  std::filesystem::copy_file(certs_.other_key, key,
                             std::filesystem::copy_options::overwrite_existing);
  ASSERT_EQ(::kill(skiffd_.pid(), SIGHUP), 0);
  ASSERT_TRUE(WaitForLog("certificate not reloaded"));
  EXPECT_TRUE(Contains(Healthz(), "200 OK"));  // still the old pair, trusted by the old root

  // Then the new pair, swapped while the 20 connections keep writing.
  std::filesystem::copy_file(next.key, key, std::filesystem::copy_options::overwrite_existing);
  std::filesystem::copy_file(next.cert, cert, std::filesystem::copy_options::overwrite_existing);
  ASSERT_EQ(::kill(skiffd_.pid(), SIGHUP), 0);
  ASSERT_TRUE(WaitForLog("certificate reloaded"));

  auto result_line = client.ReadLine(seconds(60));
  ASSERT_OK(result_line);
  const json result = json::parse(*result_line);
  ASSERT_TRUE(result["ok"].get<bool>()) << *result_line;
  EXPECT_EQ(result["closed"], 0) << *result_line;
  EXPECT_EQ(result["after"], 20 * 50) << *result_line;
  EXPECT_GT(result["answered"].get<int>(), 0) << *result_line;
  auto exited = client.Wait();
  ASSERT_OK(exited);
  EXPECT_EQ(*exited, 0);
  // A client trusting only the old root is now refused by its own check.
  TlsClient old_trust(certs_.ca);
  EXPECT_FALSE(old_trust.Connect(port_));
}

}  // namespace
}  // namespace skiff
