// The links on the server's own I/O loops and WebSocket codec: a link is a
// client connection of ours, so it masks what it sends and reads unmasked
// frames (ws::Role::kClient).
#ifndef ASIO_STANDALONE
#define ASIO_STANDALONE
#endif

#include "server/cluster/peer_links.h"

#include <atomic>
#include <chrono>
#include <future>
#include <optional>
#include <set>
#include <unordered_map>
#include <utility>

#include <asio/connect.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/post.hpp>
#include <asio/ssl/context.hpp>
#include <asio/ssl/host_name_verification.hpp>
#include <asio/ssl/stream.hpp>
#include <asio/write.hpp>

#include "base/mutex.h"
#include "doc/document.h"
#include "server/cluster/relay_frame.h"
#include "server/internal/io_loop.h"

#include "ws/frame.h"
#include "ws/handshake.h"

namespace skiff::server::cluster {
namespace {

using asio::ip::tcp;
using TlsSocket = asio::ssl::stream<tcp::socket>;

// A link that is not logged in this long after it began is given up and
// opened again (the peer may be frozen; TCP alone would wait minutes).
constexpr std::chrono::milliseconds kOpenTimeout{2000};
// After a link fails, while its peer is still alive.
constexpr std::chrono::milliseconds kReopenAfter{200};
constexpr size_t kReadChunk = 64 * 1024;
constexpr size_t kMaxHandshakeBytes = 16 * 1024;
// Replies are as large as the peer's frames may be; its own limit holds them.
constexpr size_t kMaxReplyBytes = size_t{1} << 30;

}  // namespace

// The client side of TLS to the peers; null without TLS. A CA file that
// cannot be read leaves the context without roots: every link then fails
// its handshake, and says so.
std::unique_ptr<asio::ssl::context> ClientContext(const PeerTls& tls, Logger& logger) {
  if (!tls.enabled) return nullptr;
  auto ctx = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_client);
  ctx->set_options(asio::ssl::context::no_sslv2 | asio::ssl::context::no_sslv3 |
                   asio::ssl::context::no_tlsv1 | asio::ssl::context::no_tlsv1_1);
  asio::error_code ec;
  if (tls.ca_file.empty()) {
    ctx->set_default_verify_paths(ec);
  } else {
    ctx->load_verify_file(tls.ca_file, ec);
  }
  if (ec) {
    Logf(logger, LogLevel::kError, "cluster", "cannot load the roots for peer links (%s): %s",
         tls.ca_file.empty() ? "the system store" : tls.ca_file.c_str(), ec.message().c_str());
  }
  ctx->set_verify_mode(asio::ssl::verify_peer);
  return ctx;
}

struct PeerLinks::Registry : std::enable_shared_from_this<Registry> {
  Registry(std::string s, Logger& l, const PeerTls& tls)
      : secret(std::move(s)), logger(l), tls_context(ClientContext(tls, l)) {}

  // Opens a link to `peer` on the next loop.
  void OpenLocked(uint64_t peer, const std::string& address) SKIFF_REQUIRES(mu);
  // A link closed: forgets it and, when it failed while its peer is alive,
  // opens another shortly.
  void Closed(Link* link, const std::string& why, bool expected);
  void Reopen(uint64_t peer);
  void Opened(uint64_t peer);

  const std::string secret;
  Logger& logger;
  const std::unique_ptr<asio::ssl::context> tls_context;  // null: plain ws://
  std::atomic<uint64_t> next_id{1};
  Mutex mu;
  std::vector<internal::IoLoop*> loops SKIFF_GUARDED_BY(mu);
  size_t next_loop SKIFF_GUARDED_BY(mu) = 0;
  std::map<uint64_t, std::string> wanted SKIFF_GUARDED_BY(mu);
  std::map<uint64_t, std::shared_ptr<Link>> links SKIFF_GUARDED_BY(mu);
  bool stopping SKIFF_GUARDED_BY(mu) = false;
  // Peers whose link failed and has not opened since: said once, not at
  // every attempt (a peer that stops is tried until the table drops it).
  std::set<uint64_t> failing SKIFF_GUARDED_BY(mu);
};

// One link. Everything but open() runs on the loop's thread.
class PeerLinks::Link : public std::enable_shared_from_this<Link> {
 public:
  Link(std::shared_ptr<Registry> registry, internal::IoLoop& loop, uint64_t peer,
       std::string address)
      : registry_(std::move(registry)),
        loop_(loop),
        peer_(peer),
        address_(std::move(address)),
        reader_(ws::Role::kClient, kMaxReplyBytes) {}

  internal::IoLoop& loop() { return loop_; }
  uint64_t peer() const { return peer_; }
  const std::string& address() const { return address_; }
  // Logged in: requests may be relayed.
  bool open() const { return open_.load(std::memory_order_acquire); }

  void Begin();
  void Relay(uint64_t id, std::string text, Done done);
  // Ends the link: what waits on it is lost, what was not sent yet never
  // reaches the peer. `expected`: closed on purpose (no reopening, no
  // warning).
  void Close(const std::string& why, bool expected);

 private:
  enum class State { kConnecting, kHandshake, kLogin, kOpen, kClosed };

  void Connected();
  // TLS: the handshake with the peer, its certificate checked for `host`.
  void Handshake(const std::string& host);
  // The TCP socket under TLS or alone.
  tcp::socket& lowest() { return tls_ ? tls_->next_layer() : *socket_; }
  void Read();
  void Received();
  bool OnMessage(const ws::Message& m);
  void Queue(ws::Opcode opcode, std::string_view payload);
  void Write();

  const std::shared_ptr<Registry> registry_;
  internal::IoLoop& loop_;
  const uint64_t peer_;
  const std::string address_;
  std::atomic<bool> open_{false};
  // Loop thread only. The socket is made there, as every socket of the loop.
  State state_ = State::kConnecting;
  std::optional<tcp::resolver> resolver_;
  std::optional<tcp::socket> socket_;  // plain links
  std::optional<TlsSocket> tls_;       // TLS links
  std::string key_;                    // the handshake's Sec-WebSocket-Key
  std::string in_;                     // read, not yet consumed
  ws::FrameReader reader_;
  ws::MaskKeys masks_;
  std::string out_;      // frames queued behind the write under way
  std::string writing_;  // the write under way
  bool write_armed_ = false;
  std::unordered_map<uint64_t, Done> pending_;  // sent, waiting for a reply
};

void PeerLinks::Link::Begin() {
  if (state_ == State::kClosed) return;
  resolver_.emplace(loop_.context());
  if (registry_->tls_context != nullptr) {
    tls_.emplace(loop_.context(), *registry_->tls_context);
  } else {
    socket_.emplace(loop_.context());
  }
  loop_.After(kOpenTimeout, [self = shared_from_this()] {
    if (self->state_ != State::kOpen && self->state_ != State::kClosed) {
      self->Close("not logged in within " + std::to_string(kOpenTimeout.count()) + " ms", false);
    }
  });
  const size_t colon = address_.rfind(':');
  std::string host = address_.substr(0, colon);
  if (host.size() > 1 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  const std::string port = colon == std::string::npos ? "" : address_.substr(colon + 1);
  resolver_->async_resolve(
      host, port,
      [self = shared_from_this(), host](const asio::error_code& ec,
                                        tcp::resolver::results_type found) {
        if (self->state_ == State::kClosed) return;
        if (ec) return self->Close("cannot resolve the address: " + ec.message(), false);
        asio::async_connect(self->lowest(), found,
                            [self, host](const asio::error_code& error, const tcp::endpoint&) {
                              if (self->state_ == State::kClosed) return;
                              if (error)
                                return self->Close("cannot connect: " + error.message(), false);
                              if (self->tls_) return self->Handshake(host);
                              self->Connected();
                            });
      });
}

void PeerLinks::Link::Handshake(const std::string& host) {
  asio::error_code ec;
  // SNI takes names only; an address is checked against the certificate's
  // IP entries by the verification below.
  asio::ip::make_address(host, ec);
  if (ec) SSL_set_tlsext_host_name(tls_->native_handle(), host.c_str());
  tls_->set_verify_callback(asio::ssl::host_name_verification(host));
  tls_->async_handshake(TlsSocket::client, [self = shared_from_this()](const asio::error_code& e) {
    if (self->state_ == State::kClosed) return;
    if (e) return self->Close("TLS handshake failed: " + e.message(), false);
    self->Connected();
  });
}

void PeerLinks::Link::Connected() {
  asio::error_code ec;
  lowest().set_option(tcp::no_delay(true), ec);
  state_ = State::kHandshake;
  key_ = ws::NewClientKey();
  out_ += ws::ClientRequest(address_, key_);
  Write();
  Read();
}

void PeerLinks::Link::Read() {
  const size_t at = in_.size();
  in_.resize(at + kReadChunk);
  auto on_read = [self = shared_from_this(), at](const asio::error_code& ec, size_t n) {
    if (self->state_ == State::kClosed) return;
    self->in_.resize(at + n);
    if (ec) {
      return self->Close(ec == asio::error::eof ? "the peer closed it" : ec.message(), false);
    }
    self->Received();
    if (self->state_ != State::kClosed) self->Read();
  };
  if (tls_) {
    tls_->async_read_some(asio::buffer(in_.data() + at, kReadChunk), std::move(on_read));
  } else {
    socket_->async_read_some(asio::buffer(in_.data() + at, kReadChunk), std::move(on_read));
  }
}

void PeerLinks::Link::Received() {
  if (state_ == State::kHandshake) {
    size_t head = 0;
    std::string why;
    switch (ws::ParseUpgradeResponse(in_, key_, &head, &why)) {
      case ws::ResponseResult::kNeedMore:
        if (in_.size() > kMaxHandshakeBytes) Close("the handshake's answer is too long", false);
        return;
      case ws::ResponseResult::kRefused:
        return Close("the handshake was refused: " + why, false);
      case ws::ResponseResult::kAccepted:
        break;
    }
    in_.erase(0, head);
    state_ = State::kLogin;
    Queue(ws::Opcode::kText, "{\"id\":0,\"op\":\"login\",\"user\":\"" + std::string(kClusterUser) +
                                 "\",\"secret\":" + doc::Dump(doc::Value(registry_->secret)) + "}");
    Write();
  }
  const ws::FrameReader::Step step =
      reader_.Read(in_.data(), in_.size(), [this](const ws::Message& m) { return OnMessage(m); });
  if (state_ == State::kClosed) return;
  if (reader_.failed()) return Close("bad frame from the peer: " + reader_.error_reason(), false);
  in_.erase(0, step.consumed);
  if (in_.empty() && in_.capacity() > 4 * kReadChunk) std::string().swap(in_);
}

bool PeerLinks::Link::OnMessage(const ws::Message& m) {
  switch (m.opcode) {
    case ws::Opcode::kText:
      break;
    case ws::Opcode::kPing:
      Queue(ws::Opcode::kPong, m.payload);
      Write();
      return true;
    case ws::Opcode::kClose:
      Close("the peer closed it (" + std::to_string(m.close_code) + ")", false);
      return false;
    default:
      return true;
  }
  if (state_ == State::kLogin) {
    if (MemberText(m.payload, "ok") != "true") {
      Close("the login was refused: " + std::string(m.payload.substr(0, 200)), false);
      return false;
    }
    state_ = State::kOpen;
    open_.store(true, std::memory_order_release);
    registry_->Opened(peer_);
    return true;
  }
  const std::optional<uint64_t> id = IdOf(m.payload);
  auto it = id ? pending_.find(*id) : pending_.end();
  if (it == pending_.end()) {
    // Every request carries an id the peer's decoder reads back; a reply
    // without one is a bug on one side, and waits elsewhere are unaffected.
    Logf(registry_->logger, LogLevel::kWarning, "cluster",
         "a reply from instance %llu matches no request: %.200s",
         static_cast<unsigned long long>(peer_), std::string(m.payload).c_str());
    return true;
  }
  Done done = std::move(it->second);
  pending_.erase(it);
  done(Outcome::kReplied, m.payload);
  return state_ != State::kClosed;
}

void PeerLinks::Link::Relay(uint64_t id, std::string text, Done done) {
  if (state_ != State::kOpen) return done(Outcome::kNotSent, {});
  pending_.emplace(id, std::move(done));
  Queue(ws::Opcode::kText, text);
  Write();
}

void PeerLinks::Link::Queue(ws::Opcode opcode, std::string_view payload) {
  ws::AppendMaskedFrame(out_, opcode, payload, masks_.Next());
}

void PeerLinks::Link::Write() {
  if (write_armed_ || out_.empty() || state_ == State::kClosed) return;
  writing_.swap(out_);
  out_.clear();
  write_armed_ = true;
  auto on_written = [self = shared_from_this()](const asio::error_code& ec, size_t) {
    self->write_armed_ = false;
    self->writing_.clear();
    if (self->state_ == State::kClosed) return;
    if (ec) return self->Close("cannot send: " + ec.message(), false);
    self->Write();
  };
  if (tls_) {
    asio::async_write(*tls_, asio::buffer(writing_), std::move(on_written));
  } else {
    asio::async_write(*socket_, asio::buffer(writing_), std::move(on_written));
  }
}

void PeerLinks::Link::Close(const std::string& why, bool expected) {
  if (state_ == State::kClosed) return;
  state_ = State::kClosed;
  open_.store(false, std::memory_order_release);
  asio::error_code ignored;
  if (resolver_) resolver_->cancel();
  if (socket_ || tls_) lowest().close(ignored);
  std::unordered_map<uint64_t, Done> pending;
  pending.swap(pending_);
  for (auto& [id, done] : pending) done(Outcome::kLost, {});
  registry_->Closed(this, why, expected);
}

void PeerLinks::Registry::OpenLocked(uint64_t peer, const std::string& address) {
  internal::IoLoop& loop = *loops[next_loop++ % loops.size()];
  auto link = std::make_shared<Link>(shared_from_this(), loop, peer, address);
  links[peer] = link;
  asio::post(loop.context(), [link] { link->Begin(); });
}

void PeerLinks::Registry::Closed(Link* link, const std::string& why, bool expected) {
  MutexLock lock(&mu);
  auto it = links.find(link->peer());
  if (it == links.end() || it->second.get() != link) return;  // closed on purpose
  links.erase(it);
  if (!expected && failing.insert(link->peer()).second) {
    Logf(logger, LogLevel::kWarning, "cluster", "no link to instance %llu at %s: %s",
         static_cast<unsigned long long>(link->peer()), link->address().c_str(), why.c_str());
  }
  if (stopping || !wanted.count(link->peer())) return;
  link->loop().After(kReopenAfter,
                     [self = shared_from_this(), peer = link->peer()] { self->Reopen(peer); });
}

void PeerLinks::Registry::Opened(uint64_t peer) {
  MutexLock lock(&mu);
  if (failing.erase(peer) > 0) {
    Logf(logger, LogLevel::kInfo, "cluster", "linked to instance %llu again",
         static_cast<unsigned long long>(peer));
  }
}

void PeerLinks::Registry::Reopen(uint64_t peer) {
  MutexLock lock(&mu);
  auto it = wanted.find(peer);
  if (stopping || it == wanted.end() || links.count(peer)) return;
  OpenLocked(peer, it->second);
}

PeerLinks::PeerLinks(std::string secret, Logger& logger, PeerTls tls)
    : registry_(std::make_shared<Registry>(std::move(secret), logger, tls)) {}

PeerLinks::~PeerLinks() { Stop(); }

void PeerLinks::Start(std::vector<internal::IoLoop*> loops) {
  MutexLock lock(&registry_->mu);
  registry_->loops = std::move(loops);
}

void PeerLinks::Update(const std::map<uint64_t, std::string>& peers) {
  Registry& r = *registry_;
  MutexLock lock(&r.mu);
  r.wanted = peers;
  std::erase_if(r.failing, [&peers](uint64_t peer) { return !peers.count(peer); });
  if (r.stopping || r.loops.empty()) return;
  // A peer leaves the list once it is dead, or once it has given its
  // partitions back and every peer has routed away from it (Ownership::
  // Stop waits for that), so nothing is left to answer on its link: what
  // is still waiting there fails at once rather than never.
  for (auto it = r.links.begin(); it != r.links.end();) {
    if (peers.count(it->first)) {
      ++it;
      continue;
    }
    std::shared_ptr<Link> link = std::move(it->second);
    it = r.links.erase(it);
    asio::post(link->loop().context(), [link] { link->Close("the instance left", true); });
  }
  for (const auto& [id, address] : peers) {
    if (!r.links.count(id)) r.OpenLocked(id, address);
  }
}

PeerLinks::SendResult PeerLinks::Send(uint64_t owner, std::string_view text, Done done) {
  std::shared_ptr<Link> link;
  {
    MutexLock lock(&registry_->mu);
    auto it = registry_->links.find(owner);
    if (it == registry_->links.end() || !it->second->open()) return SendResult::kNoLink;
    link = it->second;
  }
  const uint64_t id = registry_->next_id.fetch_add(1, std::memory_order_relaxed);
  std::optional<std::string> relayed = WithId(text, id);
  if (!relayed) return SendResult::kUnreadable;
  // Posts from one thread run in order: a connection's requests leave in
  // the order it sent them.
  asio::post(link->loop().context(),
             [link, id, text = std::move(*relayed), done = std::move(done)]() mutable {
               link->Relay(id, std::move(text), std::move(done));
             });
  return SendResult::kSent;
}

void PeerLinks::Stop() {
  std::map<uint64_t, std::shared_ptr<Link>> links;
  {
    MutexLock lock(&registry_->mu);
    if (registry_->stopping) return;
    registry_->stopping = true;
    links.swap(registry_->links);
  }
  // Each link closes on its own loop; the loops run until the listener
  // stops, after this.
  for (const auto& entry : links) {
    std::shared_ptr<Link> link = entry.second;
    auto closed = std::make_shared<std::promise<void>>();
    std::future<void> done = closed->get_future();
    asio::post(link->loop().context(), [link, closed] {
      link->Close("the server stops", true);
      closed->set_value();
    });
    done.wait_for(std::chrono::seconds(2));
  }
}

}  // namespace skiff::server::cluster
