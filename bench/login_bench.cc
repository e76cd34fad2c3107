// The login family: how fast skiffd opens sessions, by each way of signing
// in (docs/protocol.md, "login / logout"; docs/deploy.md, "Token sign-in").
// Each case starts one skiffd child (SQLite store) with an HS256 key file
// and a P-256 public key, and logs in N times over 8 connections:
//
//   BM_Login/secret  user and secret of a user made with the admin API (a
//                    store read and a keyed BLAKE2b hash per login)
//   BM_Login/hs256   a JWT signed with the shared secret (HMAC-SHA256)
//   BM_Login/es256   a JWT signed with the P-256 private key (ECDSA verify)
//
// Keys and tokens are made here with OpenSSL 3, not with the server's code,
// so a fault in the server's decoding cannot cancel out: a fresh 64-byte
// HS256 key, a fresh P-256 key pair (the server gets only the public PEM),
// one token per connection (its own `sub`), valid for 10 minutes and
// granting read on one table through the `skiff` claim. The secret user is
// granted the same table.
//
// Each connection logs in, and when the login is answered logs out, and
// when that is answered logs in again, until N logins were sent in all: one
// request at a time per connection, not pipelined, because a login is run
// on a store worker while a logout is run at once on the I/O thread, so a
// pipelined logout can overtake its login (it is then refused, and the next
// login with it). The case's time is that loop, its items the logins;
// judged: the server's CPU per login, its logout included
// (server_cpu_us_per_op). Shown: logins_per_s, p50/p99 of the time from
// sending a login to its reply, and the load generator's CPU per login
// (client_cpu_us_per_op, to see that it stays below the server's).
// Counted: `logins`, the logins the server accepted. The case fails unless
// every login and every logout was accepted (a wrong key would otherwise
// time refusals) and, after the timed loop, a session on each connection,
// logged in with that connection's credentials, read the table's document.
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <benchmark/benchmark.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>

#include "base/status.h"
#include "doc/document.h"
#include "server/permissions.h"
#include "server/users.h"
#include "store/store.h"
#include "support/bench_options.h"
#include "support/bench_registry.h"
#include "support/counters.h"
#include "support/e2e_options.h"
#include "support/latency.h"
#include "support/process.h"
#include "support/skiffd_process.h"
#include "support/temp_dir.h"
#include "support/ws_fleet.h"

namespace skiff::bench {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using SteadyClock = std::chrono::steady_clock;

constexpr size_t kConnections = 8;
constexpr std::string_view kTable = "login_t";  // the one table every session may read
constexpr std::string_view kDocument = R"({"probe":"login-bench"})";
constexpr int64_t kTokenLifetimeS = 600;

enum class Method { kSecret, kHs256, kEs256 };

const char* MethodName(Method m) {
  switch (m) {
    case Method::kSecret:
      return "secret";
    case Method::kHs256:
      return "hs256";
    case Method::kEs256:
      return "es256";
  }
  return "?";
}

uint64_t Logins() { return ByProfile<uint64_t>(5'000, 50'000, 200'000); }

std::string SkiffdBinary() {
  return GetE2eOptions().skiffd.empty() ? std::string(SKIFFD_PATH) : GetE2eOptions().skiffd;
}

// ---- Keys and tokens (OpenSSL 3) ----

struct PkeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;

std::string Base64Url(std::string_view bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  out.reserve((bytes.size() * 4 + 2) / 3);
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const uint32_t v = uint32_t(uint8_t(bytes[i])) << 16 | uint32_t(uint8_t(bytes[i + 1])) << 8 |
                       uint8_t(bytes[i + 2]);
    for (int shift = 18; shift >= 0; shift -= 6) out += kAlphabet[(v >> shift) & 63];
  }
  const size_t rest = bytes.size() - i;
  if (rest > 0) {
    uint32_t v = uint32_t(uint8_t(bytes[i])) << 16;
    if (rest == 2) v |= uint32_t(uint8_t(bytes[i + 1])) << 8;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    if (rest == 2) out += kAlphabet[(v >> 6) & 63];
  }
  return out;
}

Result<std::string> HmacSha256(std::string_view key, std::string_view input) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  size_t len = 0;
  if (EVP_Q_mac(nullptr, "HMAC", nullptr, "SHA256", nullptr, key.data(), key.size(),
                reinterpret_cast<const unsigned char*>(input.data()), input.size(), mac, sizeof mac,
                &len) == nullptr) {
    return Internal("HMAC-SHA256 failed");
  }
  return std::string(reinterpret_cast<const char*>(mac), len);
}

// JWS wants ES256 signatures as R || S, 32 bytes each; OpenSSL signs DER.
Result<std::string> Es256Sign(EVP_PKEY* key, std::string_view input) {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  size_t der_len = 0;
  if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, EVP_sha256(), nullptr, key) != 1 ||
      EVP_DigestSign(ctx.get(), nullptr, &der_len,
                     reinterpret_cast<const unsigned char*>(input.data()), input.size()) != 1) {
    return Internal("ECDSA signing could not start");
  }
  std::vector<unsigned char> der(der_len);
  if (EVP_DigestSign(ctx.get(), der.data(), &der_len,
                     reinterpret_cast<const unsigned char*>(input.data()), input.size()) != 1) {
    return Internal("ECDSA signing failed");
  }
  const unsigned char* p = der.data();
  std::unique_ptr<ECDSA_SIG, decltype(&ECDSA_SIG_free)> sig(
      d2i_ECDSA_SIG(nullptr, &p, long(der_len)), ECDSA_SIG_free);
  if (!sig) return Internal("ECDSA signature is not DER");
  const BIGNUM* r = nullptr;
  const BIGNUM* s = nullptr;
  ECDSA_SIG_get0(sig.get(), &r, &s);
  unsigned char raw[64];
  if (BN_bn2binpad(r, raw, 32) != 32 || BN_bn2binpad(s, raw + 32, 32) != 32) {
    return Internal("ECDSA signature part over 32 bytes");
  }
  return std::string(reinterpret_cast<const char*>(raw), sizeof raw);
}

Result<std::string> PublicPem(EVP_PKEY* key) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), BIO_free);
  if (!bio || PEM_write_bio_PUBKEY(bio.get(), key) != 1) return Internal("cannot write PEM");
  char* data = nullptr;
  const long len = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, size_t(len));
}

// The signing side of an application's sign-in: one HS256 key and one
// P-256 key pair, made fresh.
class Issuer {
 public:
  Status Init() {
    unsigned char raw[32];
    if (RAND_bytes(raw, sizeof raw) != 1) return Internal("RAND_bytes failed");
    static constexpr char kHex[] = "0123456789abcdef";
    for (unsigned char b : raw) {
      hmac_key_ += kHex[b >> 4];
      hmac_key_ += kHex[b & 15];
    }
    ec_key_.reset(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"));
    if (!ec_key_) return Internal("P-256 key generation failed");
    return Status::Ok();
  }

  const std::string& hmac_key() const { return hmac_key_; }
  Result<std::string> ec_public_pem() const { return PublicPem(ec_key_.get()); }

  // A token for `subject`, valid from now for kTokenLifetimeS, that may
  // read kTable.
  Result<std::string> Token(Method method, const std::string& subject) const {
    const int64_t now = int64_t(std::time(nullptr));
    const doc::Value header = {{"alg", method == Method::kHs256 ? "HS256" : "ES256"},
                               {"typ", "JWT"}};
    const doc::Value claims = {{"sub", subject},
                               {"iat", now},
                               {"exp", now + kTokenLifetimeS},
                               {"skiff", {{"read", {std::string(kTable)}}}}};
    const std::string input = Base64Url(header.dump()) + "." + Base64Url(claims.dump());
    std::string signature;
    if (method == Method::kHs256) {
      SKIFF_ASSIGN_OR_RETURN(signature, HmacSha256(hmac_key_, input));
    } else {
      SKIFF_ASSIGN_OR_RETURN(signature, Es256Sign(ec_key_.get(), input));
    }
    return input + "." + Base64Url(signature);
  }

 private:
  std::string hmac_key_;
  Pkey ec_key_;
};

// ---- The server ----

Status WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
  out.close();
  return out ? Status::Ok() : Unavailable("cannot write " + path);
}

// A skiffd on a fresh SQLite file taking both token keys, with a reader
// (the secret case's user) and a writer that puts the probe document.
struct Server {
  support::TempDir dir;
  support::SkiffdProcess process;
  std::string reader_secret;
  std::string writer_secret;

  Status Start(const Issuer& issuer) {
    const std::string url = "sqlite:" + dir.File("login.db");
    {
      SKIFF_ASSIGN_OR_RETURN(std::unique_ptr<store::Store> store, store::OpenStore(url));
      const std::string table(kTable);
      SKIFF_ASSIGN_OR_RETURN(
          reader_secret, server::CreateUser(*store, "reader", server::Permissions({table}, {})));
      SKIFF_ASSIGN_OR_RETURN(
          writer_secret, server::CreateUser(*store, "writer", server::Permissions({}, {table})));
    }
    SKIFF_RETURN_IF_ERROR(WriteFile(dir.File("hs256.key"), issuer.hmac_key()));
    SKIFF_ASSIGN_OR_RETURN(const std::string pem, issuer.ec_public_pem());
    SKIFF_RETURN_IF_ERROR(WriteFile(dir.File("ec_public.pem"), pem));
    std::vector<std::string> flags = {"--store",
                                      url,
                                      "--token-hs256-key",
                                      dir.File("hs256.key"),
                                      "--token-public-key",
                                      dir.File("ec_public.pem")};
    for (const std::string& a : GetE2eOptions().skiffd_args) flags.push_back(a);
    return process.Start(SkiffdBinary(), flags);
  }
};

// ---- The load ----

// A login request is its id, then a tail fixed per connection (the
// credentials), so the loop can number each one without rebuilding it.
std::string SecretLoginTail(const std::string& user, const std::string& secret) {
  return R"(,"op":"login","user":")" + user + R"(","secret":")" + secret + R"("})";
}
std::string TokenLoginTail(const std::string& token) {
  return R"(,"op":"login","token":")" + token + R"("})";
}
std::string Frame(uint64_t id, std::string_view tail) {
  std::string frame = R"({"id":)" + std::to_string(id);
  frame += tail;
  return frame;
}
std::string LogoutFrame(uint64_t id) { return Frame(id, R"(,"op":"logout"})"); }
std::string GetFrame(uint64_t id) {
  return Frame(id, R"(,"op":"get","table":")" + std::string(kTable) + R"(","key":"probe"})");
}

// The id and whether it is {"ok":true}, from the server's reply text
// ({"id":N,"ok":...}) without a JSON parser: the load generator's CPU per
// login must stay well below the server's. False when there is no id.
bool ScanReply(std::string_view payload, uint64_t* id, bool* ok) {
  const size_t at = payload.find(R"("id":)");
  if (at == std::string_view::npos) return false;
  uint64_t v = 0;
  size_t i = at + 5, digits = 0;
  for (; i < payload.size() && payload[i] >= '0' && payload[i] <= '9'; ++i, ++digits) {
    v = v * 10 + uint64_t(payload[i] - '0');
  }
  if (digits == 0 || digits > 18) return false;
  *id = v;
  *ok = payload.find(R"("ok":true)") != std::string_view::npos;
  return true;
}

// Setup and the read check use ids 1-4; the loop numbers round k of a
// connection kFirstLoopId + 2k (login) and kFirstLoopId + 2k + 1 (logout).
constexpr uint64_t kLoginId = 1, kLogoutId = 2, kGetId = 3, kSetId = 4;
constexpr uint64_t kFirstLoopId = 10;

struct LoopFigures {
  LatencyRecorder latency{2'000'000};
  uint64_t logins_ok = 0;
  uint64_t logouts_ok = 0;
  uint64_t refused = 0;  // logins or logouts not ok, and unexpected replies
  std::string first_refusal;
  double seconds = 0;
  double server_cpu_s = 0;
  double client_cpu_s = 0;
};

// Drives the 8 connections from this thread: setup, the timed loop, the
// read check. `login_tails[i]` is connection i's login request after its id.
class LoginLoad {
 public:
  LoginLoad(const Server& server, std::vector<std::string> login_tails)
      : server_(server),
        login_tails_(std::move(login_tails)),
        fleet_([this](size_t i, std::string_view p) { OnReply(i, p); }) {}

  // Opens the connections and writes the probe document as the writer.
  Status Prepare() {
    const FleetOpenReport opened =
        fleet_.Open(server_.process.port(), kConnections, milliseconds(30000));
    if (opened.opened != kConnections) return Unavailable(opened.first_error);
    SKIFF_RETURN_IF_ERROR(Exchange(
        0, {Frame(kLoginId, SecretLoginTail("writer", server_.writer_secret)),
            R"({"id":)" + std::to_string(kSetId) + R"(,"op":"set","table":")" +
                std::string(kTable) + R"(","key":"probe","value":)" + std::string(kDocument) + "}",
            LogoutFrame(kLogoutId)}));
    return Status::Ok();
  }

  // Logs in `n` times in all, each connection one request at a time
  // (login, logout, login, ...; the file's opening comment says why).
  LoopFigures Run(uint64_t n) {
    LoopFigures f;
    figures_ = &f;
    target_ = n;
    sent_ = 0;
    const double cpu0 = support::CpuSecondsOf(server_.process.pid());
    const double client0 = ThreadCpuSeconds();
    const auto start = SteadyClock::now();
    for (size_t i = 0; i < kConnections; ++i) SendLogin(i);
    const bool done = fleet_.RunUntil([&] { return Idle() || lost() > 0; }, seconds(300));
    f.seconds = std::chrono::duration<double>(SteadyClock::now() - start).count();
    f.server_cpu_s = support::CpuSecondsOf(server_.process.pid()) - cpu0;
    f.client_cpu_s = ThreadCpuSeconds() - client0;
    figures_ = nullptr;
    if (!done && f.first_refusal.empty()) f.first_refusal = "the loop did not finish in 300 s";
    if (lost() > 0 && f.first_refusal.empty()) f.first_refusal = "a connection was dropped";
    return f;
  }

  // After the loop: each connection logs in once more and reads the probe
  // document; empty when every one read it back.
  std::string CheckReads() {
    const doc::Value expected = doc::Value::parse(kDocument);
    for (size_t i = 0; i < kConnections; ++i) {
      std::map<uint64_t, std::string> replies;
      if (Status s = Exchange(
              i, {Frame(kLoginId, login_tails_[i]), GetFrame(kGetId), LogoutFrame(kLogoutId)},
              &replies);
          !s.ok()) {
        return "connection " + std::to_string(i) + ": " + s.ToString();
      }
      const doc::Value got = doc::Value::parse(replies[kGetId], nullptr, false);
      if (got.is_discarded() || !got.contains("value") || got["value"] != expected) {
        return "connection " + std::to_string(i) +
               " did not read its table back: " + replies[kGetId];
      }
    }
    return "";
  }

  void Close() { fleet_.CloseAll(milliseconds(10000)); }
  uint64_t lost() const { return fleet_.lost() + fleet_.protocol_errors(); }

 private:
  static double ThreadCpuSeconds() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
  }

  // A connection's current round (login, then logout): its number, when
  // its login went, and whether a reply of it is still due.
  struct Round {
    uint64_t number = 0;
    SteadyClock::time_point sent_at;
    bool awaiting = false;
  };

  bool Idle() const {
    for (const Round& r : rounds_) {
      if (r.awaiting) return false;
    }
    return sent_ >= target_;
  }

  void SendLogin(size_t i) {
    if (sent_ >= target_) return;
    ++sent_;
    Round& r = rounds_[i];
    r.awaiting = true;
    r.sent_at = SteadyClock::now();
    fleet_.Send(i, Frame(kFirstLoopId + 2 * r.number, login_tails_[i]));
  }

  // Sends `frames` on connection i one after another, each when the one
  // before was answered ok; `replies` (if given) gets the answers by id.
  Status Exchange(size_t i, const std::vector<std::string>& frames,
                  std::map<uint64_t, std::string>* replies = nullptr) {
    exchange_conn_ = i;
    for (const std::string& frame : frames) {
      exchange_reply_.reset();
      fleet_.Send(i, frame);
      if (!fleet_.RunUntil([&] { return exchange_reply_.has_value(); }, seconds(30))) {
        return Unavailable("a request got no answer within 30 s");
      }
      uint64_t id = 0;
      bool ok = false;
      if (!ScanReply(*exchange_reply_, &id, &ok) || !ok) {
        return Unauthorized("refused: " + *exchange_reply_);
      }
      if (replies) (*replies)[id] = *exchange_reply_;
    }
    return Status::Ok();
  }

  void OnReply(size_t i, std::string_view payload) {
    if (figures_ == nullptr) {
      if (i == exchange_conn_) exchange_reply_.emplace(payload);
      return;
    }
    LoopFigures& f = *figures_;
    Round& r = rounds_[i];
    const uint64_t login_id = kFirstLoopId + 2 * r.number;
    uint64_t id = 0;
    bool ok = false;
    const bool known =
        ScanReply(payload, &id, &ok) && r.awaiting && (id == login_id || id == login_id + 1);
    if (!known || !ok) {
      // The round ends here: a refused login is not logged out.
      ++f.refused;
      if (f.first_refusal.empty()) f.first_refusal = std::string(payload);
      r.awaiting = false;
      ++r.number;
      return SendLogin(i);
    }
    if (id == login_id) {
      f.latency.Record(SteadyClock::now() - r.sent_at);
      ++f.logins_ok;
      fleet_.Send(i, LogoutFrame(login_id + 1));
      return;
    }
    ++f.logouts_ok;
    r.awaiting = false;
    ++r.number;
    SendLogin(i);
  }

  const Server& server_;
  std::vector<std::string> login_tails_;
  Fleet fleet_;
  Round rounds_[kConnections];
  LoopFigures* figures_ = nullptr;
  uint64_t target_ = 0;
  uint64_t sent_ = 0;
  size_t exchange_conn_ = 0;
  std::optional<std::string> exchange_reply_;
};

// Each connection's login request for `method`, after its id.
Result<std::vector<std::string>> LoginTails(Method method, const Issuer& issuer,
                                            const Server& server) {
  std::vector<std::string> frames;
  for (size_t i = 0; i < kConnections; ++i) {
    if (method == Method::kSecret) {
      frames.push_back(SecretLoginTail("reader", server.reader_secret));
    } else {
      SKIFF_ASSIGN_OR_RETURN(std::string token, issuer.Token(method, "bench-" + std::to_string(i)));
      frames.push_back(TokenLoginTail(token));
    }
  }
  return frames;
}

void BM_Login(benchmark::State& state, Method method) {
  for (auto _ : state) {
    Issuer issuer;
    if (Status s = issuer.Init(); !s.ok()) return state.SkipWithError(s.ToString().c_str());
    Server server;
    if (Status s = server.Start(issuer); !s.ok()) return state.SkipWithError(s.ToString().c_str());
    Result<std::vector<std::string>> frames = LoginTails(method, issuer, server);
    if (!frames.ok()) return state.SkipWithError(frames.status().ToString().c_str());
    LoginLoad load(server, *std::move(frames));
    if (Status s = load.Prepare(); !s.ok()) return state.SkipWithError(s.ToString().c_str());
    const uint64_t n = Logins();
    const LoopFigures f = load.Run(n);
    state.SetIterationTime(f.seconds);
    const std::string reads = f.refused == 0 ? load.CheckReads() : "";
    load.Close();
    const uint64_t lost = load.lost();
    if (Status s = server.process.Stop(); !s.ok()) {
      return state.SkipWithError(("skiffd did not stop cleanly: " + s.ToString()).c_str());
    }

    if (f.refused > 0 || f.logins_ok != n || f.logouts_ok != n) {
      const std::string why = std::to_string(f.logins_ok) + " of " + std::to_string(n) +
                              " logins and " + std::to_string(f.logouts_ok) +
                              " logouts accepted; first refusal: " + f.first_refusal;
      return state.SkipWithError(why.c_str());
    }
    if (!reads.empty()) return state.SkipWithError(reads.c_str());
    if (lost > 0) return state.SkipWithError("a connection was dropped");

    const LatencySummary l = f.latency.Summarize();
    state.SetItemsProcessed(int64_t(f.logins_ok));
    SetJudged(state, "server_cpu_us_per_op", f.server_cpu_s / double(f.logins_ok) * 1e6);
    SetDeterministic(state, "logins", double(f.logins_ok));
    SetInfo(state, "connections", double(kConnections));
    SetInfo(state, "logins_per_s", double(f.logins_ok) / f.seconds);
    SetInfo(state, "p50_us", l.p50_us);
    SetInfo(state, "p99_us", l.p99_us);
    SetInfo(state, "client_cpu_us_per_op", f.client_cpu_s / double(f.logins_ok) * 1e6);
    std::fprintf(stderr,
                 "login_bench: %s: %llu logins in %.2f s: %.0f logins/s, server %.1f us CPU per "
                 "login (load generator %.1f), p50 %.0f us, p99 %.0f us\n",
                 MethodName(method), static_cast<unsigned long long>(f.logins_ok), f.seconds,
                 double(f.logins_ok) / f.seconds, f.server_cpu_s / double(f.logins_ok) * 1e6,
                 f.client_cpu_s / double(f.logins_ok) * 1e6, l.p50_us, l.p99_us);
  }
}

const bool kRegistered = AddRegistration([] {
  for (Method m : {Method::kSecret, Method::kHs256, Method::kEs256}) {
    AddCase(std::string("BM_Login/") + MethodName(m), [m](benchmark::State& s) { BM_Login(s, m); })
        ->UseManualTime()
        ->Iterations(1)
        ->Unit(benchmark::kMillisecond);
  }
});

}  // namespace
}  // namespace skiff::bench
