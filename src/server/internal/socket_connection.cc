// SocketConnection's life and its read side: the start, the handshake,
// reading and framing under back-pressure, closing, and the deadlines the
// loop's sweep enforces. The write side (the outgoing queue and the flush
// to the socket) is in socket_connection_write.cc.
//
// Threads: everything here runs on the connection's loop thread, except
// Close, Post, PostAfter and ReleaseBarrier, which any thread may call:
// they only post to the loop, and only while the connection is not closed
// (checked under out_mu_), since the loop lives until every connection
// has ended.
#include "server/internal/socket_connection.h"

#include <string>
#include <utility>

#include <asio/post.hpp>

#include "server/internal/io_loop.h"
#include "server/internal/metrics_text.h"
#include "server/tls_context.h"

#include "ws/handshake.h"

namespace skiff::server::internal {
namespace {

using asio::ip::tcp;

// A handshake request head larger than this is refused (431).
constexpr size_t kMaxHandshakeBytes = 8 * 1024;
// Reads of one connection per turn of the loop before the others get theirs.
constexpr int kReadsPerTurn = 4;
// After our close frame, the peer's close must come within this time.
constexpr int64_t kClosingTimeoutNs = 2'000'000'000;
// Input buffers up to this capacity are kept once empty; larger ones are
// freed, so an idle connection holds no memory for a past large frame.
constexpr size_t kKeptInputCapacity = 256;

int64_t Nanos(std::chrono::milliseconds ms) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(ms).count();
}

}  // namespace

void SocketConnection::Start(IoLoop& loop, ListenerShared& shared, tcp::socket socket,
                             std::string address_key, std::string refusal) {
  auto conn = std::make_shared<SocketConnection>(loop, shared, std::move(socket),
                                                 std::move(address_key), std::move(refusal));
  conn->self_ = conn;
  conn->Begin();
}

SocketConnection::SocketConnection(IoLoop& loop, ListenerShared& shared, tcp::socket socket,
                                   std::string address_key, std::string refusal)
    : loop_(loop),
      shared_(shared),
      socket_(std::move(socket)),
      address_key_(std::move(address_key)),
      refusal_(std::move(refusal)),
      reader_(ws::Role::kServer, shared.options.max_message_bytes) {}

SocketConnection::~SocketConnection() = default;

void SocketConnection::Begin() {
  started_ns_ = shared_.NowNs();
  last_active_ns.store(started_ns_, std::memory_order_relaxed);
  asio::error_code ec;
  if (address_key_.empty()) {
    const tcp::endpoint peer = socket_.remote_endpoint(ec);
    if (!ec) remote_address_ = peer.address().to_string();
    ec.clear();
  } else {
    remote_address_ = address_key_;
  }
  socket_.non_blocking(true, ec);
  if (!ec) socket_.set_option(tcp::no_delay(true), ec);
  loop_.Add(this);
  if (ec) return Terminate();
  if (shared_.options.tls != nullptr) {
    SSL* ssl = shared_.options.tls->NewSession(socket_.native_handle());
    if (ssl == nullptr) return Terminate();
    tls_ = std::make_unique<TlsStream>(ssl);
  }
  ArmRead();
}

// ---- Reading -------------------------------------------------------------

SocketConnection::Pause SocketConnection::ReadBlocker() const {
  if (phase_ != Phase::kOpen) return Pause::kNone;
  if (barrier.load(std::memory_order_acquire) > 0) return Pause::kBarrier;
  if (in_flight.load(std::memory_order_relaxed) >= shared_.options.max_in_flight) {
    return Pause::kInFlight;
  }
  if (out_bytes_.load(std::memory_order_relaxed) > shared_.options.max_output_bytes) {
    return Pause::kOutput;
  }
  if (shared_.OverBudget() && HoldsBuffers()) return Pause::kBudget;
  return Pause::kNone;
}

bool SocketConnection::HoldsBuffers() const {
  return !in_.empty() || reader_.buffered_bytes() > 0 ||
         out_bytes_.load(std::memory_order_relaxed) > 0;
}

void SocketConnection::ArmRead() {
  if (phase_ == Phase::kDone || read_armed_ || read_scheduled_) return;
  const Pause blocker = ReadBlocker();
  if (blocker != Pause::kNone) {
    if (pause_ == Pause::kNone) shared_.paused.fetch_add(1, std::memory_order_relaxed);
    pause_ = blocker;
    return;
  }
  if (held_back_) return ScheduleRead();  // whole frames wait in in_: no readiness will come
  WaitFor(tcp::socket::wait_read, &SocketConnection::read_armed_, &SocketConnection::OnReadable);
}

void SocketConnection::WaitFor(asio::socket_base::wait_type what, bool SocketConnection::*armed,
                               void (SocketConnection::*then)()) {
  this->*armed = true;
  socket_.async_wait(what, [self = shared_from_this(), armed, then](const asio::error_code& ec) {
    SocketConnection& c = *self;
    c.*armed = false;
    if (!ec) return (c.*then)();
    // Aborted: Terminate closed the socket. Anything else ends it now.
    if (ec != asio::error::operation_aborted) c.Terminate();
  });
}

// A read attempt without waiting for readiness: after a pause, bytes may
// already sit in the socket, and readiness for them will not be reported
// again.
void SocketConnection::ScheduleRead() {
  if (phase_ == Phase::kDone || read_scheduled_) return;
  read_scheduled_ = true;
  asio::post(loop_.context(), [self = shared_from_this()] {
    self->read_scheduled_ = false;
    self->OnReadable();
  });
}

void SocketConnection::OnReadable() {
  for (int round = 0; round < kReadsPerTurn; ++round) {
    if (phase_ == Phase::kDone) return;
    if (ReadBlocker() != Pause::kNone) return ArmRead();  // records the pause
    if (held_back_) {
      // Frames a pause held back come first, in order.
      ProcessBuffered();
      // The last held-back frame may itself have raised a pause (a login
      // offloaded) with nothing left behind it: the next read must wait,
      // since the frame reader hands over a message before it asks again.
      if (held_back_ || phase_ == Phase::kDone || ReadBlocker() != Pause::kNone) {
        return ArmRead();
      }
    }
    char* buffer = loop_.read_buffer();
    Next next = Next::kHandle;
    const size_t n = ReadSome(buffer, IoLoop::kReadBufferBytes, &next);
    switch (next) {
      case Next::kHandle:
        break;
      case Next::kWaitRead:
        return ArmRead();
      case Next::kWaitWrite:
        // TLS: the handshake (or a key update) must send before it reads.
        return WaitFor(tcp::socket::wait_write, &SocketConnection::read_armed_,
                       &SocketConnection::OnReadable);
      case Next::kEnd:
        // End of stream, reset or a TLS failure: the peer is gone, or sends
        // no more. The replies of this turn's earlier reads go first, as
        // far as the socket takes them.
        if (flush_at_end_of_turn_) Flush();
        return Terminate();
    }
    read_at_ns = std::chrono::steady_clock::now().time_since_epoch().count();
    read_alone_ = loop_.ReadAlone(this, read_at_ns);
    Received(buffer, n);
    // A short read emptied the socket; readiness is reported for new bytes.
    // (TLS hands over a record at a time from what OpenSSL read ahead: it
    // says itself when the socket was emptied and no whole record is left.)
    if (tls_ != nullptr ? tls_->Drained() : n < IoLoop::kReadBufferBytes) return ArmRead();
  }
  ScheduleRead();  // more may be waiting: let the loop's other connections in first
}

size_t SocketConnection::ReadSome(char* buffer, size_t capacity, Next* next) {
  if (tls_ != nullptr) {
    const TlsStream::Io io = tls_->Read(buffer, capacity);
    switch (io.outcome) {
      case TlsStream::Outcome::kDone:
        *next = Next::kHandle;
        return io.bytes;
      case TlsStream::Outcome::kWantRead:
        *next = Next::kWaitRead;
        return 0;
      case TlsStream::Outcome::kWantWrite:
        *next = Next::kWaitWrite;
        return 0;
      case TlsStream::Outcome::kFailed:
        // Not TLS (plain HTTP on the wss:// port), a refused handshake or
        // a bad record: the connection ends without a word, as TLS has
        // none to give before it is established.
        if (phase_ == Phase::kHandshake) {
          shared_.tls_failures.fetch_add(1, std::memory_order_relaxed);
        }
        *next = Next::kEnd;
        return 0;
      case TlsStream::Outcome::kClosed:
        *next = Next::kEnd;
        return 0;
    }
  }
  asio::error_code ec;
  const size_t n = socket_.read_some(asio::buffer(buffer, capacity), ec);
  if (ec == asio::error::would_block || ec == asio::error::try_again) {
    *next = Next::kWaitRead;
    return 0;
  }
  *next = ec ? Next::kEnd : Next::kHandle;
  return ec ? 0 : n;
}

void SocketConnection::Received(char* data, size_t n) {
  bool incomplete = false;
  if (in_.empty()) {
    const size_t used = Process(data, n, &incomplete);
    if (phase_ == Phase::kDone) return;
    if (used < n) in_.assign(data + used, n - used);
  } else {
    in_.append(data, n);
    if (in_.size() >= in_needed_) {
      const size_t used = Process(in_.data(), in_.size(), &incomplete);
      if (phase_ == Phase::kDone) return;
      in_.erase(0, used);
    } else {
      incomplete = true;
    }
  }
  AfterInput(incomplete);
  FlushAtEndOfTurn();
}

void SocketConnection::ProcessBuffered() {
  held_back_ = false;
  if (phase_ == Phase::kDone || in_.empty() || in_.size() < in_needed_) return;
  bool incomplete = false;
  const size_t used = Process(in_.data(), in_.size(), &incomplete);
  if (phase_ == Phase::kDone) return;
  in_.erase(0, used);
  AfterInput(incomplete);
  FlushAtEndOfTurn();
}

// The replies of this turn's reads leave together, once the loop has read
// every connection that was ready (IoLoop::FlushAtEndOfTurn).
void SocketConnection::FlushAtEndOfTurn() {
  if (flush_at_end_of_turn_ || phase_ == Phase::kDone) return;
  if (read_alone_) return Flush();
  loop_.FlushAtEndOfTurn(shared_from_this());
  flush_at_end_of_turn_ = true;  // once the loop holds it
}

void SocketConnection::AfterInput(bool incomplete) {
  if (in_.empty() && in_.capacity() > kKeptInputCapacity) std::string().swap(in_);
  // In the closing phase only a close frame is still read: anything large
  // is not worth holding.
  if (phase_ == Phase::kClosing && in_.size() > kMaxHandshakeBytes) return Terminate();
  AccountInput();
  const bool partial = (incomplete && !in_.empty()) || reader_.in_message();
  if (!partial) {
    partial_since_ns_ = 0;
  } else if (partial_since_ns_ == 0) {
    partial_since_ns_ = shared_.NowNs();
  }
}

void SocketConnection::AccountInput() {
  const size_t now =
      phase_ == Phase::kDone ? 0 : (in_.empty() ? 0 : in_.capacity()) + reader_.buffered_bytes();
  shared_.input_bytes.fetch_add(static_cast<int64_t>(now) - static_cast<int64_t>(in_accounted_),
                                std::memory_order_relaxed);
  in_accounted_ = now;
}

size_t SocketConnection::Process(char* data, size_t size, bool* incomplete) {
  size_t used = 0;
  processing_ = true;
  if (respond_then_close_) {
    used = size;  // an HTTP answer is on its way; nothing more is read
  } else {
    if (phase_ == Phase::kHandshake) used = ProcessHandshake(data, size);
    if (phase_ == Phase::kHandshake) {
      *incomplete = used == 0;
    } else if (phase_ != Phase::kDone && !respond_then_close_ && used < size) {
      used += ProcessFrames(data + used, size - used, incomplete);
    }
  }
  processing_ = false;
  return used;
}

size_t SocketConnection::ProcessHandshake(char* data, size_t size) {
  ws::HttpRequest request;
  std::string why;
  switch (ws::ParseRequestHead(std::string_view(data, size), kMaxHandshakeBytes, &request, &why)) {
    case ws::HeadResult::kNeedMore:
      return 0;
    case ws::HeadResult::kTooLarge:
      shared_.handshake_failures.fetch_add(1, std::memory_order_relaxed);
      RespondAndClose(ws::PlainResponse(431, "Request Header Fields Too Large",
                                        "the handshake is over 8 KiB\n"));
      return size;
    case ws::HeadResult::kBad:
      shared_.handshake_failures.fetch_add(1, std::memory_order_relaxed);
      RespondAndClose(ws::PlainResponse(400, "Bad Request", why + "\n"));
      return size;
    case ws::HeadResult::kComplete:
      break;
  }
  // Probes are answered even when the server is full.
  if (request.method == "GET" && request.target == "/healthz") {
    shared_.health_checks.fetch_add(1, std::memory_order_relaxed);
    RespondAndClose(ws::PlainResponse(200, "OK", "ok\n"));
    return size;
  }
  // Scrapes too, so that a full server can still be watched.
  if (request.method == "GET" && request.target == "/metrics") {
    std::optional<std::string> page = shared_.handler.MetricsPage();
    RespondAndClose(page ? MetricsHttpResponse(*page)
                         : ws::PlainResponse(404, "Not Found", "no metrics on this port\n"));
    return size;
  }
  if (!refusal_.empty()) {
    RespondAndClose(ws::PlainResponse(503, "Service Unavailable", refusal_, "Retry-After: 1\r\n"));
    return size;
  }
  if (std::string problem = ws::UpgradeProblem(request); !problem.empty()) {
    shared_.handshake_failures.fetch_add(1, std::memory_order_relaxed);
    const bool upgrade_needed = request.upgrade.empty() || request.ws_version != "13";
    RespondAndClose(upgrade_needed
                        ? ws::PlainResponse(426, "Upgrade Required", problem + "\n",
                                            "Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n")
                        : ws::PlainResponse(400, "Bad Request", problem + "\n"));
    return size;
  }
  {
    MutexLock lock(&out_mu_);
    QueueRawLocked(ws::UpgradeResponse(request.key));
  }
  phase_ = Phase::kOpen;
  opened_ = true;
  return request.head_bytes;
}

size_t SocketConnection::ProcessFrames(char* data, size_t size, bool* incomplete) {
  const ws::FrameReader::Step step =
      reader_.Read(data, size, [this](const ws::Message& m) { return OnMessage(m); });
  if (reader_.failed()) {
    if (phase_ == Phase::kOpen) shared_.protocol_errors.fetch_add(1, std::memory_order_relaxed);
    // Failing the connection (RFC 6455 7.1.7): the close frame says why,
    // and the TCP connection ends without waiting for the peer's close.
    failing_ = true;
    BeginClose(reader_.error_code(), reader_.error_reason());
    return size;  // nothing after a violation is read
  }
  *incomplete = !step.stopped && step.consumed < size;
  held_back_ = step.stopped && step.consumed < size;
  in_needed_ = step.frame_bytes;
  return step.consumed;
}

bool SocketConnection::OnMessage(const ws::Message& m) {
  last_active_ns.store(shared_.NowNs(), std::memory_order_relaxed);
  const bool open = phase_ == Phase::kOpen;
  switch (m.opcode) {
    case ws::Opcode::kText:
      if (open) shared_.handler.OnText(self_, m.payload);
      break;
    case ws::Opcode::kBinary:
      if (open) shared_.handler.OnBinary(self_);
      break;
    case ws::Opcode::kPing:
      if (open) {
        MutexLock lock(&out_mu_);
        QueueLocked(ws::Opcode::kPong, m.payload);
      }
      break;
    case ws::Opcode::kPong:
      break;
    case ws::Opcode::kClose:
      peer_closed_ = true;
      // Echo the peer's code, as RFC 6455 5.5.1 suggests; the TCP close
      // follows once our close frame is out.
      if (open) {
        BeginClose(m.close_code == ws::kCloseNoStatus ? ws::kCloseNormal : m.close_code, "");
      }
      return false;
    case ws::Opcode::kContinuation:
      break;
  }
  if (phase_ == Phase::kDone) return false;
  return phase_ == Phase::kClosing || ReadBlocker() == Pause::kNone;
}

void SocketConnection::Resume() {
  if (pause_ == Pause::kNone || phase_ == Phase::kDone || ReadBlocker() != Pause::kNone) return;
  pause_ = Pause::kNone;
  shared_.paused.fetch_sub(1, std::memory_order_relaxed);
  // Posted, never inline: a resume may be found while bytes of in_ are
  // being handled. OnReadable takes the frames held back first.
  ScheduleRead();
}

// ---- Closing -------------------------------------------------------------

void SocketConnection::RespondAndClose(std::string response) {
  {
    MutexLock lock(&out_mu_);
    QueueRawLocked(response);
    out_closed_ = true;
  }
  respond_then_close_ = true;
  phase_ = Phase::kClosing;
  closing_since_ns_ = shared_.NowNs();
}

void SocketConnection::BeginClose(uint16_t code, std::string_view reason) {
  if (phase_ == Phase::kClosing || phase_ == Phase::kDone) return;
  {
    MutexLock lock(&out_mu_);
    if (!out_closed_) {
      QueueLocked(ws::Opcode::kClose, ws::ClosePayload(code, reason));
      out_closed_ = true;
    }
  }
  phase_ = Phase::kClosing;
  closing_since_ns_ = shared_.NowNs();
  if (pause_ != Pause::kNone) {
    // Paused connections are read again, for the peer's close frame.
    pause_ = Pause::kNone;
    shared_.paused.fetch_sub(1, std::memory_order_relaxed);
    ScheduleRead();
  }
  if (!processing_) Flush();  // inside Process, Received flushes at its end
}

void SocketConnection::Close(uint16_t code, const std::string& reason) {
  if (loop_.InThisThread()) return BeginClose(code, reason);
  // Posted under the lock while the connection is not closed: the loop is
  // alive until every connection ended (Listener::Shutdown).
  MutexLock lock(&out_mu_);
  if (out_closed_) return;
  asio::post(loop_.context(),
             [self = shared_from_this(), code, reason] { self->BeginClose(code, reason); });
}

void SocketConnection::Post(std::function<void()> fn) {
  MutexLock lock(&out_mu_);
  if (out_closed_) return;  // closing or gone: nothing more will be sent
  asio::post(loop_.context(), std::move(fn));
}

void SocketConnection::RunOnLoop(std::function<void()> fn) {
  asio::post(loop_.context(), std::move(fn));
}

void SocketConnection::PostAfter(std::chrono::milliseconds delay, std::function<void()> fn) {
  // Through Post when the time comes: dropped if the connection closed.
  loop_.After(delay, [self = shared_from_this(), f = std::move(fn)]() mutable { self->Post(f); });
}

void SocketConnection::ReleaseBarrier() {
  MutexLock lock(&out_mu_);
  if (out_closed_) return;
  asio::post(loop_.context(), [self = shared_from_this()] {
    self->barrier.fetch_sub(1, std::memory_order_acq_rel);
    self->Resume();
  });
}

void SocketConnection::Sweep(int64_t now) {
  const ListenerOptions& o = shared_.options;
  switch (phase_) {
    case Phase::kDone:
      return;
    case Phase::kHandshake:
      if (now - started_ns_ > Nanos(o.handshake_timeout)) {
        shared_.handshake_failures.fetch_add(1, std::memory_order_relaxed);
        return Terminate();
      }
      return;
    case Phase::kClosing:
      if (now - closing_since_ns_ > kClosingTimeoutNs) return Terminate();
      if (write_armed_ && now - last_progress_ns_ > Nanos(o.send_timeout)) return Terminate();
      return;
    case Phase::kOpen:
      break;
  }
  if (write_armed_ && now - last_progress_ns_ > Nanos(o.send_timeout)) {
    shared_.send_timeouts.fetch_add(1, std::memory_order_relaxed);
    return Terminate();  // its peer does not read: a close frame would not get through
  }
  if (partial_since_ns_ != 0 && now - partial_since_ns_ > Nanos(o.frame_timeout)) {
    shared_.frame_timeouts.fetch_add(1, std::memory_order_relaxed);
    std::string().swap(in_);
    AccountInput();
    failing_ = true;
    return BeginClose(ws::kClosePolicy, "frame not completed in time");
  }
  // A connection waiting for a commit or holding a sync wait is not idle.
  if (o.idle_timeout.count() > 0 && in_flight.load(std::memory_order_relaxed) == 0 &&
      now - last_active_ns.load(std::memory_order_relaxed) > Nanos(o.idle_timeout) &&
      waits.size() == 0) {
    shared_.idle_closes.fetch_add(1, std::memory_order_relaxed);
    return BeginClose(ws::kCloseNormal, "idle timeout");
  }
  if (pause_ == Pause::kBudget) Resume();
}

void SocketConnection::Terminate() {
  if (phase_ == Phase::kDone) return;
  phase_ = Phase::kDone;
  // Whoever else holds a reference (a pending handler, a commit's reply)
  // keeps the object; this may have been the last one.
  std::shared_ptr<Connection> keep = std::move(self_);
  {
    MutexLock lock(&out_mu_);
    out_closed_ = true;
    out_.clear();
  }
  writing_.clear();
  write_index_ = 0;
  const size_t unsent = out_bytes_.exchange(0, std::memory_order_relaxed);
  shared_.output_bytes.fetch_sub(static_cast<int64_t>(unsent), std::memory_order_relaxed);
  std::string().swap(in_);
  reader_.Clear();
  AccountInput();
  if (pause_ != Pause::kNone) {
    pause_ = Pause::kNone;
    shared_.paused.fetch_sub(1, std::memory_order_relaxed);
  }
  asio::error_code ec;
  socket_.close(ec);  // pending waits complete with operation_aborted
  loop_.Remove(this);
  if (refusal_.empty()) {
    shared_.Release(address_key_);
  } else {
    shared_.refusing.fetch_sub(1, std::memory_order_relaxed);
  }
  if (opened_) shared_.handler.OnClose(keep);
}

}  // namespace skiff::server::internal
