// The only translation unit of the client that compiles websocketpp.
#ifndef ASIO_STANDALONE
#define ASIO_STANDALONE
#endif

#include "client/internal/transport.h"

#include <atomic>
#include <cstdint>
#include <random>
#include <set>
#include <thread>
#include <utility>

#include <websocketpp/client.hpp>
#include <websocketpp/config/asio_client.hpp>

#include "base/mutex.h"
#include "client/internal/tls_context.h"

namespace skiff::client::internal {
namespace {

// Masking keys for client frames. websocketpp's default draws each key from
// std::random_device, which here executes RDSEED and spent over half of a
// pipelined client's CPU time. Keys only need to be unpredictable to the
// page scripts RFC 6455 guards against; a SplitMix64 stream seeded once from
// random_device serves that at a few cycles per frame. Thread-safe: frames
// are masked on whichever thread sends them.
class MaskKeyGenerator {
 public:
  MaskKeyGenerator() {
    std::random_device seed;
    state_ = (uint64_t{seed()} << 32) | seed();
  }
  uint32_t operator()() {
    uint64_t z = state_.fetch_add(0x9e3779b97f4a7c15ULL, std::memory_order_relaxed);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return static_cast<uint32_t>((z ^ (z >> 31)) >> 32);
  }

 private:
  std::atomic<uint64_t> state_{0};
};

struct PlainConfig : websocketpp::config::asio_client {
  using rng_type = MaskKeyGenerator;
  // Bytes each socket read may take (websocketpp's default: 16 KiB). A
  // bootstrap page of 1,000 rows is about 285 KB: 3 reads instead of 18,
  // each a trip through the strand and the frame parser. The buffer lives
  // in the connection object; an idle connection never touches most of it.
  // (TLS reads stop at a 16 KiB record anyway: TlsConfig keeps the default.)
  static const size_t connection_read_buffer_size = 128 * 1024;
};
struct TlsConfig : websocketpp::config::asio_tls_client {
  using rng_type = MaskKeyGenerator;
};

// The handle of one connection of either kind, given to the caller at once
// and bound to its websocketpp connection when that is made on the I/O
// thread.
template <typename Config>
class WsTransportConnection final : public TransportConnection {
 public:
  using ConnectionPtr = typename websocketpp::client<Config>::connection_ptr;

  bool SendText(std::string_view payload) override {
    return Send(payload, websocketpp::frame::opcode::text);
  }
  bool SendBinary(std::string_view payload) override {
    return Send(payload, websocketpp::frame::opcode::binary);
  }
  void Close() override {
    if (ConnectionPtr con = Get()) {
      websocketpp::lib::error_code ec;
      con->close(websocketpp::close::status::normal, "", ec);
    }
  }

  void Set(const ConnectionPtr& con) {
    MutexLock lock(&mu_);
    con_ = con;
  }

 private:
  ConnectionPtr Get() {
    MutexLock lock(&mu_);
    return con_.lock();
  }

  bool Send(std::string_view payload, websocketpp::frame::opcode::value op) {
    ConnectionPtr con = Get();
    if (!con || con->get_state() != websocketpp::session::state::open) return false;
    return !con->send(payload.data(), payload.size(), op);
  }

  Mutex mu_;
  std::weak_ptr<typename websocketpp::client<Config>::connection_type> con_
      SKIFF_GUARDED_BY(mu_);  // set once connecting
};

// Why a TLS handshake failed, when OpenSSL can say; the socket's or
// websocketpp's word otherwise.
std::string TlsReason(const websocketpp::client<PlainConfig>::connection_ptr&) { return ""; }
std::string TlsReason(const websocketpp::client<TlsConfig>::connection_ptr& con) {
  return TlsFailureReason(con->get_socket().native_handle());
}

// One websocketpp client endpoint (plain or TLS) on the transport's
// io_context, and the connections it has open. Runs on the I/O thread
// except CloseAll's post and OpenCount.
template <typename Config>
class Endpoint {
 public:
  using Client = websocketpp::client<Config>;
  using ConnectionPtr = typename Client::connection_ptr;

  explicit Endpoint(asio::io_context& io) {
    client_.clear_access_channels(websocketpp::log::alevel::all);
    client_.clear_error_channels(websocketpp::log::elevel::all);
    client_.init_asio(&io);
  }

  Client& client() { return client_; }

  // Makes the websocketpp connection for `uri` and starts it; on failure
  // before the socket is even made, says why through `handlers`.
  void Connect(const std::shared_ptr<WsTransportConnection<Config>>& wrapper,
               const std::string& uri, TransportHandlers handlers) {
    websocketpp::lib::error_code ec;
    ConnectionPtr con = client_.get_connection(uri, ec);
    if (ec) {
      if (handlers.on_close) handlers.on_close("cannot connect to " + uri + ": " + ec.message());
      return;
    }
    auto shared = std::make_shared<TransportHandlers>(std::move(handlers));
    con->set_tcp_pre_init_handler([this](websocketpp::connection_hdl hdl) {
      asio::error_code nodelay_ec;
      client_.get_con_from_hdl(hdl)->get_raw_socket().set_option(asio::ip::tcp::no_delay(true),
                                                                 nodelay_ec);
    });
    con->set_open_handler([shared](websocketpp::connection_hdl) {
      if (shared->on_open) shared->on_open();
    });
    con->set_message_handler(
        [shared](websocketpp::connection_hdl, typename Client::message_ptr msg) {
          // websocketpp makes a new message for each one it reads, so its
          // payload can be handed over instead of copied.
          shared->on_message(msg->get_raw_payload(),
                             msg->get_opcode() != websocketpp::frame::opcode::text);
        });
    auto gone = [this, shared](websocketpp::connection_hdl hdl) {
      ConnectionPtr c = client_.get_con_from_hdl(hdl);
      {
        MutexLock lock(&mu_);
        open_.erase(c);
      }
      std::string reason = TlsReason(c);
      if (reason.empty()) reason = c->get_ec() ? c->get_ec().message() : "connection closed";
      if (!c->get_remote_close_reason().empty()) reason = c->get_remote_close_reason();
      if (shared->on_close) shared->on_close(reason);
    };
    con->set_close_handler(gone);
    con->set_fail_handler(gone);
    wrapper->Set(con);
    {
      MutexLock lock(&mu_);
      open_.insert(con);
    }
    client_.connect(con);
  }

  // Starts closing every open connection (on the I/O thread).
  void CloseAll() {
    MutexLock lock(&mu_);
    for (const ConnectionPtr& con : open_) {
      websocketpp::lib::error_code ec;
      con->close(websocketpp::close::status::going_away, "", ec);
    }
  }

  size_t OpenCount() {
    MutexLock lock(&mu_);
    return open_.size();
  }

  void Clear() {
    MutexLock lock(&mu_);
    open_.clear();
  }

 private:
  Client client_;
  Mutex mu_;
  std::set<ConnectionPtr> open_ SKIFF_GUARDED_BY(mu_);
};

class WsTransport final : public Transport {
 public:
  WsTransport() : work_(asio::make_work_guard(io_)), plain_(io_), tls_(io_) {
    // websocketpp asks for a TLS context while it makes a connection
    // (inside get_connection); OpenTls hands it the one it just made.
    tls_.client().set_tls_init_handler(
        [this](websocketpp::connection_hdl) { return std::move(next_tls_context_); });
    thread_ = std::thread([this] { io_.run(); });
  }

  ~WsTransport() override { Shutdown(); }

  std::shared_ptr<TransportConnection> Open(const std::string& host, uint16_t port,
                                            const TransportTls& tls,
                                            TransportHandlers handlers) override {
    // An IPv6 literal goes in brackets, or its colons read as the port's.
    const std::string authority = (host.find(':') != std::string::npos ? "[" + host + "]" : host) +
                                  ":" + std::to_string(port);
    if (!tls.enabled) {
      auto wrapper = std::make_shared<WsTransportConnection<PlainConfig>>();
      std::string uri = "ws://" + authority + "/";
      Post([this, wrapper, uri, handlers = std::move(handlers)]() mutable {
        plain_.Connect(wrapper, uri, std::move(handlers));
      });
      return wrapper;
    }
    auto wrapper = std::make_shared<WsTransportConnection<TlsConfig>>();
    std::string uri = "wss://" + authority + "/";
    Post([this, wrapper, uri, host, tls, handlers = std::move(handlers)]() mutable {
      OpenTls(wrapper, uri, host, tls, std::move(handlers));
    });
    return wrapper;
  }

  void Post(std::function<void()> fn) override { asio::post(io_, std::move(fn)); }

  void After(std::chrono::milliseconds delay, std::function<void()> fn) override {
    auto timer = std::make_shared<asio::steady_timer>(io_, delay);
    timer->async_wait([timer, fn = std::move(fn)](const asio::error_code& ec) {
      if (!ec) fn();
    });
  }

  void Shutdown() override {
    MutexLock shutdown_lock(&shutdown_mu_);
    if (!thread_.joinable()) return;
    work_.reset();
    Post([this] {
      plain_.CloseAll();
      tls_.CloseAll();
    });
    // A peer that never answers the close is cut off by the stop below.
    for (int i = 0; i < 200; ++i) {
      if (plain_.OpenCount() == 0 && tls_.OpenCount() == 0) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    io_.stop();
    thread_.join();
    plain_.Clear();
    tls_.Clear();
  }

 private:
  // On the I/O thread: a context of its own for this connection (its CA
  // file and name check), then the connection.
  void OpenTls(const std::shared_ptr<WsTransportConnection<TlsConfig>>& wrapper,
               const std::string& uri, const std::string& host, const TransportTls& tls,
               TransportHandlers handlers) {
    auto context = std::make_shared<asio::ssl::context>(asio::ssl::context::tls_client);
    if (Status configured = ConfigureClientTls(context->native_handle(), host, tls);
        !configured.ok()) {
      if (handlers.on_close) handlers.on_close(configured.message());
      return;
    }
    next_tls_context_ = std::move(context);
    tls_.Connect(wrapper, uri, std::move(handlers));
    next_tls_context_.reset();
  }

  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  Endpoint<PlainConfig> plain_;
  Endpoint<TlsConfig> tls_;
  std::shared_ptr<asio::ssl::context> next_tls_context_;  // I/O thread only
  std::thread thread_ SKIFF_GUARDED_BY(shutdown_mu_);
  Mutex shutdown_mu_;
};

}  // namespace

std::unique_ptr<Transport> Transport::Create() { return std::make_unique<WsTransport>(); }

}  // namespace skiff::client::internal
