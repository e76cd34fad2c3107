// The only translation unit of the server that compiles websocketpp.
#ifndef ASIO_STANDALONE
#define ASIO_STANDALONE
#endif

#include "server/internal/listener.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <exception>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include <websocketpp/config/asio_no_tls.hpp>
#include <websocketpp/server.hpp>

namespace skiff::server::internal {
namespace {

class WsConnection;

// Appends the header of one unmasked, final text frame of `size` payload
// bytes (RFC 6455 section 5.2): servers never mask.
void AppendFrameHeader(std::string& out, size_t size) {
  out.push_back(static_cast<char>(0x81));  // FIN, opcode text
  if (size < 126) {
    out.push_back(static_cast<char>(size));
  } else if (size <= 0xFFFF) {
    out.push_back(static_cast<char>(126));
    out.push_back(static_cast<char>((size >> 8) & 0xFF));
    out.push_back(static_cast<char>(size & 0xFF));
  } else {
    out.push_back(static_cast<char>(127));
    for (int shift = 56; shift >= 0; shift -= 8) {
      out.push_back(static_cast<char>((static_cast<uint64_t>(size) >> shift) & 0xFF));
    }
  }
}

// Replies up to this size are gathered into the connection's next batch;
// a larger one leaves on its own, so it is never copied.
constexpr size_t kBatchedReplyBytes = 16 * 1024;
// A batch this large is sent at once instead of waiting for the flush.
constexpr size_t kBatchBytes = 256 * 1024;

// websocketpp derives each connection from config::connection_base, which
// lets the connection carry our object without a lookup table.
struct ConnectionSlot {
  std::shared_ptr<WsConnection> skiff;
  // Called by the patched handle_read_frame (tools/cmake/SkiffWebsocketpp.cmake)
  // once every message of one read has been handled, before the next read.
  void skiff_after_read();
};

struct WsConfig : websocketpp::config::asio {
  using connection_base = ConnectionSlot;
};

using WsServer = websocketpp::server<WsConfig>;
using WsConnectionPtr = WsServer::connection_ptr;

// Replies leave in batches: every reply produced while one read's requests
// are handled is appended, frame header included, to one buffer, and the
// buffer goes out as one prepared websocketpp message when the read's last
// message has been handled (ConnectionSlot::skiff_after_read). Replies
// produced elsewhere (a commit releases many at once) are batched the same
// way and sent by a flush posted to the I/O threads, unless a read is under
// way and will send them. One send per batch instead of one per reply is
// what lets a pipelining client get many replies per read; websocketpp's own
// per-message path also copied each payload twice and scanned our own JSON
// for UTF-8.
class WsConnection final : public Connection, public std::enable_shared_from_this<WsConnection> {
 public:
  explicit WsConnection(std::weak_ptr<WsServer::connection_type> con) : con_(std::move(con)) {}

  void Send(std::string frame) override {
    WsConnectionPtr con = con_.lock();
    if (!con) return;
    std::lock_guard<std::mutex> lock(out_mu_);
    if (frame.size() > kBatchedReplyBytes) {
      // Order: whatever is batched goes first.
      FlushLocked(*con);
      std::string header;
      AppendFrameHeader(header, frame.size());
      SendPrepared(*con, std::move(header), std::move(frame));
      return;
    }
    Append(*con, frame);
  }

  void SendCopy(std::string_view frame) override {
    if (frame.size() > kBatchedReplyBytes) return Send(std::string(frame));
    WsConnectionPtr con = con_.lock();
    if (!con) return;
    std::lock_guard<std::mutex> lock(out_mu_);
    Append(*con, frame);
  }

  void Close(uint16_t code, const std::string& reason) override {
    if (WsConnectionPtr con = con_.lock()) {
      {
        std::lock_guard<std::mutex> lock(out_mu_);
        FlushLocked(*con);  // replies already produced go out before the close
      }
      websocketpp::lib::error_code ec;
      con->close(code, reason, ec);
    }
  }

  void Post(std::function<void()> fn) override {
    if (WsConnectionPtr con = con_.lock()) {
      asio::post(con->get_socket().get_executor(), std::move(fn));
    }
  }

  // A read's messages are about to be handled / have been handled.
  void EnterRead() {
    // Called for every message of a read. Only the connection's strand
    // writes reading_, and this runs on it, so reading it unlocked is safe.
    if (reading_) return;
    std::lock_guard<std::mutex> lock(out_mu_);
    reading_ = true;
  }
  void LeaveRead(WsServer::connection_type& con) {
    std::lock_guard<std::mutex> lock(out_mu_);
    reading_ = false;
    FlushLocked(con);
  }

 private:
  void Flush() {
    WsConnectionPtr con = con_.lock();
    std::lock_guard<std::mutex> lock(out_mu_);
    flush_posted_ = false;
    if (con) {
      FlushLocked(*con);
    } else {
      batch_.clear();
    }
  }

  // Adds a small frame to the batch and makes sure the batch will leave;
  // out_mu_ is held.
  void Append(WsServer::connection_type& con, std::string_view frame) {
    AppendFrameHeader(batch_, frame.size());
    batch_ += frame;
    if (batch_.size() >= kBatchBytes) {
      FlushLocked(con);
    } else if (!reading_ && !flush_posted_) {
      flush_posted_ = true;
      asio::post(con.get_socket().get_executor(), [self = shared_from_this()] { self->Flush(); });
    }
  }

  // Sends the batch; out_mu_ is held, so batches leave in the order their
  // replies were produced.
  void FlushLocked(WsServer::connection_type& con) {
    if (batch_.empty()) return;
    std::string bytes;
    bytes.swap(batch_);
    SendPrepared(con, std::string(), std::move(bytes));
  }

  // A prepared message is written as header + payload, untouched.
  static void SendPrepared(WsServer::connection_type& con, std::string header,
                           std::string payload) {
    WsServer::message_ptr msg = con.get_message(websocketpp::frame::opcode::text, 0);
    if (!msg) return;  // out of message buffers: the connection is failing
    msg->set_header(header);
    msg->get_raw_payload().swap(payload);
    msg->set_prepared(true);
    // An error here means the connection is closing; the reply is moot.
    (void)con.send(msg);
  }

  // Weak: the websocketpp connection owns us through ConnectionSlot.
  std::weak_ptr<WsServer::connection_type> con_;
  std::mutex out_mu_;
  std::string batch_;          // guarded by out_mu_
  bool flush_posted_ = false;  // guarded by out_mu_
  bool reading_ = false;       // guarded by out_mu_
};

void ConnectionSlot::skiff_after_read() {
  if (skiff) skiff->LeaveRead(static_cast<WsServer::connection_type&>(*this));
}

class WsListener final : public Listener {
 public:
  WsListener(const ListenerOptions& options, ListenerHandler& handler, const Clock& clock)
      : options_(options), handler_(handler), clock_(clock) {}

  ~WsListener() override { Shutdown(std::chrono::milliseconds(0)); }

  Status Init() {
    server_.clear_access_channels(websocketpp::log::alevel::all);
    server_.clear_error_channels(websocketpp::log::elevel::all);
    websocketpp::lib::error_code ec;
    server_.init_asio(ec);
    if (ec) return Internal("websocket init failed: " + ec.message());
    server_.set_reuse_addr(true);
    server_.set_listen_backlog(asio::socket_base::max_listen_connections);
    server_.set_max_message_size(options_.max_message_bytes);

    // TCP_NODELAY must be set here: the socket is not open yet in the
    // socket-init handler.
    server_.set_tcp_pre_init_handler([this](websocketpp::connection_hdl hdl) {
      asio::error_code nodelay_ec;
      server_.get_con_from_hdl(hdl)->get_socket().set_option(asio::ip::tcp::no_delay(true),
                                                             nodelay_ec);
    });
    server_.set_validate_handler([this](websocketpp::connection_hdl) { return accepting_.load(); });
    server_.set_open_handler([this](websocketpp::connection_hdl hdl) { OnOpen(hdl); });
    server_.set_close_handler([this](websocketpp::connection_hdl hdl) { OnGone(hdl); });
    server_.set_fail_handler([this](websocketpp::connection_hdl hdl) { OnGone(hdl); });
    server_.set_message_handler([this](websocketpp::connection_hdl hdl, WsServer::message_ptr msg) {
      OnMessage(hdl, msg);
    });

    asio::ip::address address = asio::ip::make_address(options_.address, ec);
    if (ec) return BadRequest("cannot parse listen address '" + options_.address + "'");
    server_.listen(asio::ip::tcp::endpoint(address, options_.port), ec);
    if (ec) {
      return Unavailable("cannot listen on " + options_.address + ":" +
                         std::to_string(options_.port) + ": " + ec.message());
    }
    port_ = server_.get_local_endpoint(ec).port();
    if (ec) return Internal("cannot read the bound port: " + ec.message());
    server_.start_accept(ec);
    if (ec) return Internal("cannot accept: " + ec.message());

    if (options_.idle_timeout.count() > 0) {
      idle_timer_ = std::make_unique<asio::steady_timer>(server_.get_io_service());
      ArmIdleTimer();
    }
    size_t threads = std::max<size_t>(1, options_.io_threads);
    for (size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { RunLoop(); });
    return Status::Ok();
  }

  uint16_t port() const override { return port_; }

  size_t connections() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return open_.size();
  }

  void StopAccepting() override {
    // websocketpp runs its accept loop on any I/O thread without a strand,
    // so closing the acceptor from here (or from a posted handler) races
    // with it. New handshakes are refused instead; the acceptor closes with
    // the endpoint once the I/O threads have stopped.
    accepting_.store(false);
  }

  void Shutdown(std::chrono::milliseconds grace) override {
    std::lock_guard<std::mutex> shutdown_lock(shutdown_mu_);
    if (threads_.empty()) return;
    StopAccepting();
    std::vector<std::shared_ptr<WsConnection>> open;
    {
      std::lock_guard<std::mutex> lock(mu_);
      open.assign(open_.begin(), open_.end());
    }
    for (const auto& conn : open) conn->Close(kCloseGoingAway, "server shutting down");
    open.clear();
    {
      std::unique_lock<std::mutex> lock(mu_);
      closed_cv_.wait_for(lock, grace, [this] { return open_.empty(); });
    }
    server_.stop();
    for (std::thread& t : threads_) t.join();
    threads_.clear();
    std::lock_guard<std::mutex> lock(mu_);
    open_.clear();
  }

 private:
  void RunLoop() {
    // A handler that throws must not take the server down; keep serving.
    for (;;) {
      try {
        server_.run();
        return;
      } catch (const std::exception& e) {
        std::fprintf(stderr, "skiff server: I/O loop error: %s\n", e.what());
      }
    }
  }

  void ArmIdleTimer() {
    auto period = std::clamp<std::chrono::milliseconds>(
        options_.idle_timeout / 4, std::chrono::milliseconds(10), std::chrono::milliseconds(1000));
    idle_timer_->expires_after(period);
    idle_timer_->async_wait([this](const asio::error_code& ec) {
      // Only one wait is ever pending, so the timer is never used by two
      // threads at once; it is not cancelled, just not re-armed.
      if (ec || !accepting_.load()) return;
      CloseIdle();
      ArmIdleTimer();
    });
  }

  void CloseIdle() {
    int64_t now = clock_.Now().time_since_epoch().count();
    int64_t limit = std::chrono::nanoseconds(options_.idle_timeout).count();
    std::vector<std::shared_ptr<WsConnection>> idle;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (const auto& conn : open_) {
        if (now - conn->last_active_ns.load(std::memory_order_relaxed) > limit &&
            conn->in_flight.load() == 0) {
          idle.push_back(conn);
        }
      }
    }
    for (const auto& conn : idle) conn->Close(kCloseNormal, "idle timeout");
  }

  void OnOpen(websocketpp::connection_hdl hdl) {
    WsConnectionPtr con = server_.get_con_from_hdl(hdl);
    con->skiff = std::make_shared<WsConnection>(con);
    con->skiff->last_active_ns = clock_.Now().time_since_epoch().count();
    std::lock_guard<std::mutex> lock(mu_);
    open_.insert(con->skiff);
  }

  void OnGone(websocketpp::connection_hdl hdl) {
    WsConnectionPtr con = server_.get_con_from_hdl(hdl);
    std::shared_ptr<WsConnection> conn = std::move(con->skiff);
    if (!conn) return;  // the handshake never completed
    handler_.OnClose(conn);
    std::lock_guard<std::mutex> lock(mu_);
    open_.erase(conn);
    if (open_.empty()) closed_cv_.notify_all();
  }

  void OnMessage(websocketpp::connection_hdl hdl, const WsServer::message_ptr& msg) {
    WsConnectionPtr con = server_.get_con_from_hdl(hdl);
    const std::shared_ptr<WsConnection>& conn = con->skiff;
    if (!conn) return;
    conn->last_active_ns.store(clock_.NowCoarse().time_since_epoch().count(),
                               std::memory_order_relaxed);
    conn->EnterRead();
    if (msg->get_opcode() == websocketpp::frame::opcode::text) {
      handler_.OnText(conn, msg->get_payload());
    } else {
      handler_.OnBinary(conn);
    }
  }

  const ListenerOptions options_;
  ListenerHandler& handler_;
  const Clock& clock_;
  WsServer server_;
  uint16_t port_ = 0;
  std::unique_ptr<asio::steady_timer> idle_timer_;  // used by its own handler only
  std::atomic<bool> accepting_{true};
  std::vector<std::thread> threads_;  // guarded by shutdown_mu_
  std::mutex shutdown_mu_;

  mutable std::mutex mu_;
  std::condition_variable closed_cv_;
  std::set<std::shared_ptr<WsConnection>> open_;  // guarded by mu_
};

}  // namespace

Result<std::unique_ptr<Listener>> Listener::Start(const ListenerOptions& options,
                                                  ListenerHandler& handler, const Clock& clock) {
  auto listener = std::make_unique<WsListener>(options, handler, clock);
  SKIFF_RETURN_IF_ERROR(listener->Init());
  return std::unique_ptr<Listener>(std::move(listener));
}

}  // namespace skiff::server::internal
