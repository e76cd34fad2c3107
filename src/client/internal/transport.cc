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
#include <websocketpp/config/asio_no_tls_client.hpp>

#include "base/mutex.h"

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

struct ClientConfig : websocketpp::config::asio_client {
  using rng_type = MaskKeyGenerator;
};

using WsClient = websocketpp::client<ClientConfig>;
using WsConnectionPtr = WsClient::connection_ptr;

class WsTransportConnection final : public TransportConnection {
 public:
  bool SendText(std::string_view payload) override {
    return Send(payload, websocketpp::frame::opcode::text);
  }
  bool SendBinary(std::string_view payload) override {
    return Send(payload, websocketpp::frame::opcode::binary);
  }
  void Close() override {
    if (WsConnectionPtr con = Get()) {
      websocketpp::lib::error_code ec;
      con->close(websocketpp::close::status::normal, "", ec);
    }
  }

  void Set(const WsConnectionPtr& con) {
    MutexLock lock(&mu_);
    con_ = con;
  }

 private:
  WsConnectionPtr Get() {
    MutexLock lock(&mu_);
    return con_.lock();
  }

  bool Send(std::string_view payload, websocketpp::frame::opcode::value op) {
    WsConnectionPtr con = Get();
    if (!con || con->get_state() != websocketpp::session::state::open) return false;
    return !con->send(payload.data(), payload.size(), op);
  }

  Mutex mu_;
  std::weak_ptr<WsClient::connection_type> con_ SKIFF_GUARDED_BY(mu_);  // set once connecting
};

class WsTransport final : public Transport {
 public:
  WsTransport() {
    client_.clear_access_channels(websocketpp::log::alevel::all);
    client_.clear_error_channels(websocketpp::log::elevel::all);
    client_.init_asio();
    // Keep run() alive while no connection is open.
    client_.start_perpetual();
    thread_ = std::thread([this] { client_.run(); });
  }

  ~WsTransport() override { Shutdown(); }

  std::shared_ptr<TransportConnection> Open(const std::string& host, uint16_t port,
                                            TransportHandlers handlers) override {
    auto wrapper = std::make_shared<WsTransportConnection>();
    std::string uri = "ws://" + host + ":" + std::to_string(port) + "/";
    Post([this, wrapper, uri, handlers = std::move(handlers)]() mutable {
      Connect(wrapper, uri, std::move(handlers));
    });
    return wrapper;
  }

  void Post(std::function<void()> fn) override {
    asio::post(client_.get_io_service(), std::move(fn));
  }

  void After(std::chrono::milliseconds delay, std::function<void()> fn) override {
    auto timer = std::make_shared<asio::steady_timer>(client_.get_io_service(), delay);
    timer->async_wait([timer, fn = std::move(fn)](const asio::error_code& ec) {
      if (!ec) fn();
    });
  }

  void Shutdown() override {
    MutexLock shutdown_lock(&shutdown_mu_);
    if (!thread_.joinable()) return;
    client_.stop_perpetual();
    Post([this] {
      MutexLock lock(&mu_);
      for (const WsConnectionPtr& con : open_) {
        websocketpp::lib::error_code ec;
        con->close(websocketpp::close::status::going_away, "", ec);
      }
    });
    // A peer that never answers the close is cut off by the stop below.
    for (int i = 0; i < 200; ++i) {
      {
        MutexLock lock(&mu_);
        if (open_.empty()) break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    client_.stop();
    thread_.join();
    MutexLock lock(&mu_);
    open_.clear();
  }

 private:
  void Connect(const std::shared_ptr<WsTransportConnection>& wrapper, const std::string& uri,
               TransportHandlers handlers) {
    websocketpp::lib::error_code ec;
    WsConnectionPtr con = client_.get_connection(uri, ec);
    if (ec) {
      if (handlers.on_close) handlers.on_close("cannot connect to " + uri + ": " + ec.message());
      return;
    }
    auto shared = std::make_shared<TransportHandlers>(std::move(handlers));
    con->set_tcp_pre_init_handler([this](websocketpp::connection_hdl hdl) {
      asio::error_code nodelay_ec;
      client_.get_con_from_hdl(hdl)->get_socket().set_option(asio::ip::tcp::no_delay(true),
                                                             nodelay_ec);
    });
    con->set_open_handler([shared](websocketpp::connection_hdl) {
      if (shared->on_open) shared->on_open();
    });
    con->set_message_handler([shared](websocketpp::connection_hdl, WsClient::message_ptr msg) {
      shared->on_message(msg->get_payload(), msg->get_opcode() != websocketpp::frame::opcode::text);
    });
    auto gone = [this, shared](websocketpp::connection_hdl hdl) {
      WsConnectionPtr c = client_.get_con_from_hdl(hdl);
      {
        MutexLock lock(&mu_);
        open_.erase(c);
      }
      std::string reason = c->get_ec() ? c->get_ec().message() : "connection closed";
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

  WsClient client_;
  std::thread thread_ SKIFF_GUARDED_BY(shutdown_mu_);
  Mutex shutdown_mu_;
  Mutex mu_;
  std::set<WsConnectionPtr> open_ SKIFF_GUARDED_BY(mu_);
};

}  // namespace

std::unique_ptr<Transport> Transport::Create() { return std::make_unique<WsTransport>(); }

}  // namespace skiff::client::internal
