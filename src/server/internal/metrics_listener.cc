// The metrics listener on standalone Asio: one thread, one event loop, one
// answer per connection.
#ifndef ASIO_STANDALONE
#define ASIO_STANDALONE
#endif

#include "server/internal/metrics_listener.h"

#include <array>
#include <charconv>
#include <memory>
#include <set>
#include <string_view>
#include <thread>
#include <utility>

#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <asio/write.hpp>

#include "server/internal/metrics_text.h"

namespace skiff::server::internal {
namespace {

using asio::ip::tcp;

// After an answer the peer's leftover bytes are read and dropped for this
// long at most (and this many), so the close does not reset the connection
// under an answer the peer has not read yet.
constexpr std::chrono::seconds kDrainTimeout{2};
constexpr size_t kMaxDrainBytes = 64 * 1024;
// accept failed (no descriptor, say): wait before trying again rather than
// spin.
constexpr std::chrono::milliseconds kAcceptBackoff{100};

std::string PlainAnswer(int code, std::string_view reason, std::string_view body) {
  std::string r = "HTTP/1.1 " + std::to_string(code) + " ";
  r += reason;
  r += "\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ";
  r += std::to_string(body.size());
  r += "\r\nConnection: close\r\n\r\n";
  r += body;
  return r;
}

bool IsTokenChar(char c) { return c >= 'A' && c <= 'Z'; }

// Splits a request line ("METHOD SP TARGET SP HTTP/1.x", without its line
// end); false when it is not one.
bool ParseRequestLine(std::string_view line, std::string_view* method, std::string_view* path) {
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos) return false;
  *method = line.substr(0, sp1);
  const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = line.substr(sp2 + 1);
  if (method->empty() || method->size() > 16) return false;
  for (char c : *method) {
    if (!IsTokenChar(c)) return false;
  }
  if (target.empty() || target.front() != '/' || target.find(' ') != std::string_view::npos) {
    return false;
  }
  if (version.size() != 8 || version.substr(0, 7) != "HTTP/1.") return false;
  *path = target.substr(0, target.find('?'));
  return true;
}

std::string BadRequestAnswer() { return PlainAnswer(400, "Bad Request", "bad request line\n"); }
std::string TooLargeAnswer() {
  return PlainAnswer(431, "Request Header Fields Too Large", "request head over 8 KiB\n");
}

class AsioMetricsListener;

class MetricsConnection : public std::enable_shared_from_this<MetricsConnection> {
 public:
  MetricsConnection(AsioMetricsListener& owner, tcp::socket socket);
  ~MetricsConnection();

  void Start() {
    Arm(MetricsListener::kHeadTimeout);
    Read();
  }
  void Close() {
    asio::error_code ec;
    socket_.close(ec);
    timer_.cancel();
  }

 private:
  void Arm(std::chrono::steady_clock::duration d) {
    timer_.expires_after(d);
    timer_.async_wait([self = shared_from_this()](const asio::error_code& ec) {
      if (!ec) self->Close();  // the deadline passed; operation_aborted: re-armed or done
    });
  }

  void Read() {
    socket_.async_read_some(asio::buffer(buffer_),
                            [self = shared_from_this()](const asio::error_code& ec, size_t n) {
                              if (ec) return self->Close();
                              self->OnRead(n);
                            });
  }

  void OnRead(size_t n) {
    head_.append(buffer_.data(), n);
    // The request line decides the answer: a line that is already wrong is
    // answered without waiting for the rest of the head.
    const size_t line_end = head_.find('\n');
    if (line_end == std::string::npos) {
      if (head_.size() > MetricsListener::kMaxHeadBytes) return Respond(TooLargeAnswer());
      return Read();
    }
    std::string_view line(head_.data(), line_end);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    std::string_view method;
    std::string_view path;
    if (!ParseRequestLine(line, &method, &path)) return Respond(BadRequestAnswer());
    // The head ends with an empty line (bare LFs tolerated).
    size_t head_end = head_.find("\r\n\r\n");
    if (head_end != std::string::npos) head_end += 4;
    const size_t lf_end = head_.find("\n\n");
    if (lf_end != std::string::npos && (head_end == std::string::npos || lf_end + 2 < head_end)) {
      head_end = lf_end + 2;
    }
    if (head_end == std::string::npos || head_end > MetricsListener::kMaxHeadBytes) {
      if (head_.size() > MetricsListener::kMaxHeadBytes) return Respond(TooLargeAnswer());
      return Read();
    }
    if (method != "GET" || path != "/metrics") {
      return Respond(PlainAnswer(404, "Not Found", "only GET /metrics is served here\n"));
    }
    Respond(MetricsHttpResponse(owner_page()()));
  }

  void Respond(std::string answer) {
    answer_ = std::move(answer);
    Arm(MetricsListener::kWriteTimeout);
    asio::async_write(socket_, asio::buffer(answer_),
                      [self = shared_from_this()](const asio::error_code& ec, size_t) {
                        if (ec) return self->Close();
                        asio::error_code ignored;
                        self->socket_.shutdown(tcp::socket::shutdown_send, ignored);
                        self->Arm(kDrainTimeout);
                        self->Drain();
                      });
  }

  // Reads what the peer still sends until it closes, the drain budget is
  // spent or the deadline passes.
  void Drain() {
    socket_.async_read_some(asio::buffer(buffer_),
                            [self = shared_from_this()](const asio::error_code& ec, size_t n) {
                              self->drained_ += n;
                              if (ec || self->drained_ > kMaxDrainBytes) return self->Close();
                              self->Drain();
                            });
  }

  const MetricsListener::Page& owner_page() const;

  AsioMetricsListener& owner_;
  tcp::socket socket_;
  asio::steady_timer timer_;
  std::array<char, 2048> buffer_{};
  std::string head_;
  std::string answer_;
  size_t drained_ = 0;
};

class AsioMetricsListener final : public MetricsListener {
 public:
  AsioMetricsListener(Page page, Logger& logger)
      : page_(std::move(page)), logger_(logger), acceptor_(io_), backoff_(io_) {}
  ~AsioMetricsListener() override { Stop(); }

  Status Init(const std::string& address) {
    std::string host;
    uint16_t port = 0;
    SKIFF_RETURN_IF_ERROR(ParseAddress(address, &host, &port));
    asio::error_code ec;
    const asio::ip::address ip = asio::ip::make_address(host, ec);
    if (ec) return BadRequest("metrics address '" + address + "': cannot parse '" + host + "'");
    const tcp::endpoint endpoint(ip, port);
    acceptor_.open(endpoint.protocol(), ec);
    if (!ec) acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
    if (!ec) acceptor_.bind(endpoint, ec);
    if (!ec) acceptor_.listen(16, ec);
    if (ec) return Unavailable("cannot listen for metrics on " + address + ": " + ec.message());
    port_ = acceptor_.local_endpoint(ec).port();
    if (ec) return Internal("cannot read the bound metrics port: " + ec.message());
    Accept();
    thread_ = std::thread([this] { io_.run(); });
    return Status::Ok();
  }

  uint16_t port() const override { return port_; }

  void Stop() override {
    if (!thread_.joinable()) return;
    // Closing everything leaves the loop no work: run() returns.
    asio::post(io_, [this] {
      stopping_ = true;
      asio::error_code ec;
      acceptor_.close(ec);
      backoff_.cancel();
      for (MetricsConnection* c : std::set<MetricsConnection*>(conns_)) c->Close();
    });
    thread_.join();
  }

  const Page& page() const { return page_; }
  void Register(MetricsConnection* c) { conns_.insert(c); }
  void Unregister(MetricsConnection* c) { conns_.erase(c); }

 private:
  static Status ParseAddress(const std::string& address, std::string* host, uint16_t* port) {
    const size_t colon = address.rfind(':');
    if (colon == std::string::npos || colon == 0) {
      return BadRequest("metrics address '" + address + "' is not HOST:PORT");
    }
    *host = address.substr(0, colon);
    if (host->size() >= 2 && host->front() == '[' && host->back() == ']') {
      *host = host->substr(1, host->size() - 2);
    }
    const std::string_view digits = std::string_view(address).substr(colon + 1);
    unsigned value = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size() ||
        value > 65535) {
      return BadRequest("metrics address '" + address + "' has no valid port");
    }
    *port = static_cast<uint16_t>(value);
    return Status::Ok();
  }

  void Accept() {
    acceptor_.async_accept([this](const asio::error_code& ec, tcp::socket socket) {
      if (stopping_ || ec == asio::error::operation_aborted) return;
      if (ec) {
        Logf(logger_, LogLevel::kWarning, "metrics", "accept failed: %s", ec.message().c_str());
        backoff_.expires_after(kAcceptBackoff);
        backoff_.async_wait([this](const asio::error_code& wait_ec) {
          if (!wait_ec && !stopping_) Accept();
        });
        return;
      }
      // A scraper needs one connection at a time; more are refused
      // unanswered rather than let anyone hold descriptors here.
      if (conns_.size() < kMaxConnections) {
        std::make_shared<MetricsConnection>(*this, std::move(socket))->Start();
      }
      Accept();
    });
  }

  const Page page_;
  Logger& logger_;
  // Before io_: connections the loop still holds at its destruction
  // unregister from it.
  std::set<MetricsConnection*> conns_;  // loop thread (or after the join)
  bool stopping_ = false;               // loop thread
  asio::io_context io_;
  tcp::acceptor acceptor_;
  asio::steady_timer backoff_;
  uint16_t port_ = 0;
  std::thread thread_;
};

MetricsConnection::MetricsConnection(AsioMetricsListener& owner, tcp::socket socket)
    : owner_(owner), socket_(std::move(socket)), timer_(socket_.get_executor()) {
  owner_.Register(this);
}

MetricsConnection::~MetricsConnection() { owner_.Unregister(this); }

const MetricsListener::Page& MetricsConnection::owner_page() const { return owner_.page(); }

}  // namespace

Result<std::unique_ptr<MetricsListener>> MetricsListener::Start(const std::string& address,
                                                                Page page, Logger& logger) {
  auto listener = std::make_unique<AsioMetricsListener>(std::move(page), logger);
  SKIFF_RETURN_IF_ERROR(listener->Init(address));
  return std::unique_ptr<MetricsListener>(std::move(listener));
}

}  // namespace skiff::server::internal
