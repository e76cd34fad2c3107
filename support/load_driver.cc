#include "support/load_driver.h"

#ifndef ASIO_STANDALONE
#define ASIO_STANDALONE
#endif

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <type_traits>
#include <vector>

#include <asio.hpp>
#include <asio/ssl/stream.hpp>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>

#include "support/driver_tls.h"
#include "support/frame_input.h"

#include "ws/frame.h"
#include "ws/handshake.h"

namespace skiff::bench {
namespace {

using SteadyClock = std::chrono::steady_clock;

// Ids carry the slot in their low bits so a reply finds its slot without a
// map; the high bits make every id of a connection unique.
constexpr uint64_t kSlotBits = 12;
constexpr uint64_t kMaxPipeline = uint64_t{1} << kSlotBits;
constexpr auto kSweepPeriod = std::chrono::milliseconds(20);
constexpr int64_t kLateSendNs = std::chrono::nanoseconds(kLateSend).count();
constexpr int64_t kNotStarved = INT64_MAX;
constexpr int64_t kNotArmed = -1;

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(SteadyClock::now().time_since_epoch())
      .count();
}

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

// The id at the start of a reply: {"id":N,...}. False when there is none
// (the server could not read the request's id).
bool ParseId(std::string_view reply, uint64_t* id) {
  constexpr std::string_view kPrefix = "{\"id\":";
  if (reply.substr(0, kPrefix.size()) != kPrefix) return false;
  uint64_t v = 0;
  size_t i = kPrefix.size();
  if (i >= reply.size() || reply[i] < '0' || reply[i] > '9') return false;
  for (; i < reply.size() && reply[i] >= '0' && reply[i] <= '9'; ++i) v = v * 10 + (reply[i] - '0');
  *id = v;
  return true;
}

ReplyView MakeView(std::string_view text) {
  ReplyView view;
  view.text = text;
  std::string_view ok = ReplyMember(text, "ok");
  view.ok = ok == "true";
  if (!view.ok) {
    constexpr std::string_view kCode = "\"code\":\"";
    size_t at = text.find(kCode);
    if (at != std::string_view::npos) {
      size_t start = at + kCode.size();
      size_t end = text.find('"', start);
      if (end != std::string_view::npos) view.error_code = text.substr(start, end - start);
    }
  }
  return view;
}

}  // namespace

const char* ErrorKindName(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kTimeout:
      return "timeout";
    case ErrorKind::kClose:
      return "close";
    case ErrorKind::kRejected:
      return "rejected";
    case ErrorKind::kMismatch:
      return "mismatch";
    case ErrorKind::kProtocol:
      return "protocol";
    case ErrorKind::kCount:
      break;
  }
  return "unknown";
}

uint64_t RunResult::error_count() const {
  uint64_t n = 0;
  for (uint64_t e : errors) n += e;
  return n;
}

void AppendJsonString(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20) {
      out += "\\u00";
      out += kHex[u >> 4];
      out += kHex[u & 15];
    } else {
      out += c;
    }
  }
  out += '"';
}

std::string_view ReplyMember(std::string_view reply, std::string_view name) {
  std::string needle = "\"" + std::string(name) + "\":";
  size_t at = reply.find(needle);
  if (at == std::string_view::npos) return {};
  size_t start = at + needle.size();
  size_t end = reply.find_first_of(",}", start);
  if (end == std::string_view::npos) return {};
  return reply.substr(start, end - start);
}

std::string_view LastReplyMember(std::string_view reply, std::string_view name) {
  std::string needle = "\"" + std::string(name) + "\":";
  size_t at = reply.find(needle);
  if (at == std::string_view::npos || reply.empty() || reply.back() != '}') return {};
  size_t start = at + needle.size();
  return reply.substr(start, reply.size() - 1 - start);
}

// One connection's socket, buffers and slots.
struct DriverConnection {
  struct Slot {
    uint64_t id = 0;  // 0 = nothing in flight
    int64_t sent_ns = 0;
    bool done = false;  // the workload has nothing more for this slot
  };

  DriverConnection(asio::io_context& io, size_t i) : index(i), socket(io) {}

  const size_t index;  // in the driver's list

  asio::ip::tcp::socket socket;
  // TLS over `socket`: an Asio stream for the event loop, or in the
  // sequential mode OpenSSL on the descriptor itself (RunSequential).
  std::unique_ptr<asio::ssl::stream<asio::ip::tcp::socket&>> tls;
  std::unique_ptr<SslFdStream> fd_tls;
  FrameInput reader;
  std::string out;      // frames waiting for the write in progress
  std::string writing;  // the frames of the write in progress
  bool write_busy = false;
  bool read_busy = false;
  bool open = true;
  // RunSequential made the socket blocking, with a receive timeout; the
  // event loop makes it non-blocking again before it runs.
  bool blocking = false;
  uint64_t sequence = 0;
  std::vector<Slot> slots;
};

class LoadDriver::Impl {
 public:
  explicit Impl(const DriverOptions& options)
      : options_(options),
        sequential_(options.connections == 1 && options.pipeline == 1),
        timer_(io_),
        pace_timer_(io_) {}

  Status Open() {
    if (options_.connections == 0) return BadRequest("connections must be at least 1");
    if (options_.pipeline == 0 || options_.pipeline >= kMaxPipeline) {
      return BadRequest("pipeline must be between 1 and " + std::to_string(kMaxPipeline - 1));
    }
    asio::error_code ec;
    asio::ip::tcp::resolver resolver(io_);
    auto endpoints = resolver.resolve(options_.host, std::to_string(options_.port), ec);
    if (ec) return Unavailable("cannot resolve " + options_.host + ": " + ec.message());
    if (options_.tls) {
      auto context = NewClientContext(options_.tls_ca, options_.insecure);
      if (!context.ok()) return context.status();
      tls_context_ = std::move(*context);
    }
    for (size_t i = 0; i < options_.connections; ++i) {
      auto conn = std::make_unique<DriverConnection>(io_, conns_.size());
      asio::connect(conn->socket, endpoints, ec);
      if (ec) return Unavailable("cannot connect to " + Where() + ": " + ec.message());
      conn->socket.set_option(asio::ip::tcp::no_delay(true));
      if (tls_context_) SKIFF_RETURN_IF_ERROR(StartTls(*conn));
      SKIFF_RETURN_IF_ERROR(Handshake(*conn));
      conn->slots.resize(options_.pipeline);
      conns_.push_back(std::move(conn));
      if (!options_.user.empty()) {
        std::string body = "\"op\":\"login\",\"user\":";
        AppendJsonString(body, options_.user);
        body += ",\"secret\":";
        AppendJsonString(body, options_.secret);
        Result<std::string> reply = CallOn(conns_.size() - 1, body);
        if (!reply.ok()) return reply.status();
        if (!MakeView(*reply).ok) return Unauthorized("login refused: " + *reply);
      }
    }
    return Status::Ok();
  }

  RunResult Run(Workload& workload, const RunLimits& limits) {
    result_ = RunResult();
    if (limits.rate > 0 && !conns_.empty() && conns_[0]->fd_tls) {
      // Its connection has no Asio stream to pace requests on.
      Count(ErrorKind::kProtocol, "an open-loop run over TLS needs more than one slot");
      return std::move(result_);
    }
    workload_ = &workload;
    limits_ = limits;
    issued_ = 0;
    in_flight_ = 0;
    const double cpu_start = limits.client_cpu ? ThreadCpuSeconds() : 0;
    start_ns_ = NowNs();
    deadline_ns_ = start_ns_ + limits.cap.count();
    pacing_ = limits.rate > 0;
    starved_since_ns_ = kNotStarved;
    timer_due_ns_ = kNotArmed;
    free_slots_.clear();
    const bool sequential_run = sequential_ && limits.rate <= 0;
    if (!sequential_run) {
      // Asio writes and reads below: a socket RunSequential made blocking
      // goes back first (a lost one has its slots marked done next).
      for (auto& conn : conns_) {
        if (conn->open && conn->blocking) SetBlocking(*conn, false);
      }
    }
    for (size_t c = 0; c < conns_.size(); ++c) {
      for (auto& slot : conns_[c]->slots) slot.done = !conns_[c]->open;
      if (conns_[c]->open) result_.slots += conns_[c]->slots.size();
      for (size_t s = 0; s < conns_[c]->slots.size(); ++s) {
        if (pacing_) {
          if (conns_[c]->open) free_slots_.push_back({c, s});
        } else {
          Issue(c, s, start_ns_);
        }
      }
      Flush(*conns_[c]);
    }
    if (pacing_) {
      // Slot 0 of every connection first, then slot 1, ...: the load is
      // spread over the connections before it is pipelined on any.
      std::stable_sort(free_slots_.begin(), free_slots_.end(),
                       [](const auto& a, const auto& b) { return a.second > b.second; });
      Pace();
    }
    if (in_flight_ > 0 && sequential_run) {
      RunSequential(*conns_[0]);
    } else if (in_flight_ > 0 || pacing_) {
      for (auto& conn : conns_) StartRead(*conn);
      ScheduleSweep();
      io_.restart();
      io_.run();
    }
    timer_.cancel();
    pace_timer_.cancel();
    pacing_ = false;
    result_.wall_seconds = double(NowNs() - start_ns_) * 1e-9;
    if (limits.client_cpu) result_.client_cpu_seconds = ThreadCpuSeconds() - cpu_start;
    workload_ = nullptr;
    return std::move(result_);
  }

  Result<std::string> CallOn(size_t conn_index, std::string_view body) {
    // A one-request workload on one slot of one connection; the other
    // connections take no part.
    class One final : public Workload {
     public:
      explicit One(std::string_view body) : body_(body) {}
      bool Next(size_t, size_t slot, std::string& out) override {
        if (sent_ || slot != 0) return false;
        sent_ = true;
        out += body_;
        return true;
      }
      std::string Check(size_t, size_t, const ReplyView& reply) override {
        reply_ = std::string(reply.text);
        return {};
      }
      void Failed(size_t, size_t, bool refused) override { refused_ = refused; }
      std::string_view body_;
      bool sent_ = false;
      bool refused_ = false;
      std::string reply_;
    };
    One one(body);
    only_conn_ = conn_index;
    RunLimits limits{1, options_.timeout * 2};
    limits.client_cpu = false;
    RunResult r = Run(one, limits);
    only_conn_ = SIZE_MAX;
    if (!one.reply_.empty()) return one.reply_;
    if (one.refused_) return last_refused_;
    return Unavailable("no reply from " + Where() + ": " + r.first_error);
  }

  const DriverOptions& options() const { return options_; }
  size_t open_connections() const {
    return std::count_if(conns_.begin(), conns_.end(), [](const auto& c) { return c->open; });
  }

 private:
  std::string Where() const { return options_.host + ":" + std::to_string(options_.port); }

  // TLS on a connected socket: OpenSSL on the descriptor for a sequential
  // driver, which never runs the event loop on it, else an Asio stream.
  Status StartTls(DriverConnection& conn) {
    if (sequential_) {
      const int fd = conn.socket.native_handle();
      const int flags = fcntl(fd, F_GETFL);
      if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
        return Internal(std::string("cannot make the socket blocking: ") + std::strerror(errno));
      }
      auto stream = SslFdStream::Connect(*tls_context_, fd, options_.host);
      if (!stream.ok()) return stream.status();
      conn.fd_tls = std::move(*stream);
      return Status::Ok();
    }
    conn.tls =
        std::make_unique<asio::ssl::stream<asio::ip::tcp::socket&>>(conn.socket, *tls_context_);
    SSL* ssl = conn.tls->native_handle();
    if (!ExpectServerName(ssl, options_.host)) {
      return Internal("TLS: cannot set the name to verify, " + options_.host);
    }
    asio::error_code ec;
    conn.tls->handshake(asio::ssl::stream_base::client, ec);
    if (ec) {
      return Unavailable("TLS handshake with " + Where() + ": " +
                         HandshakeFailure(ssl, ec.message()));
    }
    return Status::Ok();
  }

  Status Handshake(DriverConnection& conn) {
    if (conn.fd_tls) return Upgrade(conn, *conn.fd_tls);
    if (conn.tls) return Upgrade(conn, *conn.tls);
    return Upgrade(conn, conn.socket);
  }

  // The WebSocket upgrade over `stream`, with blocking calls.
  template <typename Stream>
  Status Upgrade(DriverConnection& conn, Stream& stream) {
    auto failed = [&](const asio::error_code& ec) {
      std::string why = ec.message();
      if constexpr (std::is_same_v<Stream, SslFdStream>) {
        if (!stream.error().empty()) why = stream.error();
      }
      return Unavailable("handshake with " + Where() + ": " + why);
    };
    asio::error_code ec;
    const std::string key = ws::NewClientKey();
    const std::string request = ws::ClientRequest(Where(), key);
    asio::write(stream, asio::buffer(request), ec);
    if (ec) return failed(ec);
    asio::streambuf response;
    asio::read_until(stream, response, "\r\n\r\n", ec);
    if (ec) return failed(ec);
    const std::string received(asio::buffers_begin(response.data()),
                               asio::buffers_end(response.data()));
    size_t head = 0;
    std::string why;
    if (ws::ParseUpgradeResponse(received, key, &head, &why) != ws::ResponseResult::kAccepted) {
      return Unavailable("no WebSocket at " + Where() + ": " + why);
    }
    // Bytes after the head already belong to the frame stream.
    conn.reader.Append(std::string_view(received).substr(head));
    return Status::Ok();
  }

  // Sends the slot's next request, unless the run is over for it.
  void Issue(size_t c, size_t s, int64_t now_ns) {
    DriverConnection& conn = *conns_[c];
    DriverConnection::Slot& slot = conn.slots[s];
    if (slot.done || !conn.open) return;
    if (only_conn_ != SIZE_MAX && c != only_conn_) {
      slot.done = true;
      return;
    }
    if (issued_ >= limits_.max_ops || now_ns >= deadline_ns_) {
      if (now_ns >= deadline_ns_ && issued_ < limits_.max_ops) result_.capped = true;
      slot.done = true;
      return;
    }
    body_.clear();
    if (!workload_->Next(c, s, body_)) {
      slot.done = true;
      return;
    }
    slot.id = (++conn.sequence << kSlotBits) | s;
    slot.sent_ns = now_ns;
    payload_.clear();
    payload_ += "{\"id\":";
    payload_ += std::to_string(slot.id);
    payload_ += ',';
    payload_ += body_;
    payload_ += '}';
    ws::AppendMaskedFrame(conn.out, ws::Opcode::kText, payload_, mask_keys_.Next());
    ++issued_;
    ++in_flight_;
  }

  // One connection with one request in flight: plain blocking calls on the
  // socket, as a sequential client makes them and as the loopback TCP
  // ping-pong the sequential scenarios are held to does, instead of a turn
  // of the event loop per request (two system calls per request, not
  // five). The socket never carries an asynchronous operation in this mode.
  // Replies are handled by the same code as in the event loop; a receive
  // timeout of one sweep period lets Sweep() time requests out.
  void RunSequential(DriverConnection& conn) {
    // Once per connection, not per run: a one-request call (LoadDriver::
    // Call, as geo_bench's skiffd client makes every request) would pay
    // three system calls more than the request's own two.
    if (!conn.blocking && !SetBlocking(conn, true)) return;
    const int fd = conn.socket.native_handle();
    while (in_flight_ > 0 && conn.open) {
      if (!conn.out.empty() && conn.fd_tls) {
        if (!conn.fd_tls->Write(conn.out)) {
          return Lost(conn, "write failed: " + conn.fd_tls->error());
        }
        conn.out.clear();
      } else if (!conn.out.empty()) {
        std::string_view left = conn.out;
        while (!left.empty()) {
          const ssize_t n = ::send(fd, left.data(), left.size(), MSG_NOSIGNAL);
          if (n < 0 && errno == EINTR) continue;
          if (n <= 0) return Lost(conn, std::string("write failed: ") + std::strerror(errno));
          left.remove_prefix(size_t(n));
        }
        conn.out.clear();
      }
      FrameInput::Span space = conn.reader.Space();
      if (conn.fd_tls) {
        ReadTls(conn, space);
        continue;
      }
      const ssize_t n = ::recv(fd, space.data, space.size, 0);
      if (n > 0) {
        conn.reader.Commit(size_t(n));
        OnBytes(conn);
      } else if (n == 0) {
        Lost(conn, "closed by the server");
      } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
        Sweep();  // a sweep period without a reply
      } else if (errno != EINTR) {
        Lost(conn, std::string("read failed: ") + std::strerror(errno));
      }
    }
  }

  // Makes the socket blocking with a receive timeout of one sweep period
  // (RunSequential), or non-blocking again (the event loop). False, and the
  // connection lost, when the kernel refuses.
  bool SetBlocking(DriverConnection& conn, bool blocking) {
    // Through Asio, which remembers whether it made the socket
    // non-blocking and does not look again before its own operations.
    asio::error_code ec;
    conn.socket.native_non_blocking(!blocking, ec);
    if (ec) {
      Lost(conn, std::string("cannot make the socket ") + (blocking ? "" : "non-") +
                     "blocking: " + ec.message());
      return false;
    }
    timeval period{};
    if (blocking) period.tv_usec = std::chrono::microseconds(kSweepPeriod).count();
    setsockopt(conn.socket.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &period, sizeof period);
    conn.blocking = blocking;
    return true;
  }

  // RunSequential's read over TLS.
  void ReadTls(DriverConnection& conn, FrameInput::Span space) {
    const ptrdiff_t n = conn.fd_tls->Read(space.data, space.size);
    if (n > 0) {
      conn.reader.Commit(size_t(n));
      OnBytes(conn);
    } else if (n == SslFdStream::kClosed) {
      Lost(conn, "closed by the server");
    } else if (n == SslFdStream::kTimedOut) {
      Sweep();
    } else {
      Lost(conn, "read failed: " + conn.fd_tls->error());
    }
  }

  void Flush(DriverConnection& conn) {
    if (sequential_ && limits_.rate <= 0) return;  // RunSequential writes
    if (conn.write_busy || conn.out.empty() || !conn.open) return;
    conn.write_busy = true;
    conn.writing.swap(conn.out);
    conn.out.clear();
    auto written = [this, &conn](const asio::error_code& ec, size_t) {
      conn.write_busy = false;
      conn.writing.clear();
      if (ec) return Lost(conn, "write failed: " + ec.message());
      Flush(conn);
    };
    if (conn.tls) {
      asio::async_write(*conn.tls, asio::buffer(conn.writing), std::move(written));
    } else {
      asio::async_write(conn.socket, asio::buffer(conn.writing), std::move(written));
    }
  }

  void StartRead(DriverConnection& conn) {
    if (conn.read_busy || !conn.open) return;
    conn.read_busy = true;
    FrameInput::Span space = conn.reader.Space();
    auto read = [this, &conn](const asio::error_code& ec, size_t n) {
      conn.read_busy = false;
      if (ec) {
        // A TLS server may close without close_notify (stream_truncated).
        const bool closed = ec == asio::error::eof || ec == asio::ssl::error::stream_truncated;
        return Lost(conn, closed ? "closed by the server" : "read failed: " + ec.message());
      }
      conn.reader.Commit(n);
      OnBytes(conn);
      if (conn.open) StartRead(conn);
    };
    if (conn.tls) {
      conn.tls->async_read_some(asio::buffer(space.data, space.size), std::move(read));
    } else {
      conn.socket.async_read_some(asio::buffer(space.data, space.size), std::move(read));
    }
  }

  void OnBytes(DriverConnection& conn) {
    const int64_t now_ns = NowNs();
    const size_t c = conn.index;
    bool closed = false;
    const bool valid = conn.reader.Drain([&](const ws::Message& m) {
      if (m.opcode == ws::Opcode::kClose) {
        closed = true;
        return false;
      }
      if (m.opcode == ws::Opcode::kPing) {
        ws::AppendMaskedFrame(conn.out, ws::Opcode::kPong, m.payload, mask_keys_.Next());
      } else if (m.opcode == ws::Opcode::kText) {
        OnReply(c, m.payload, now_ns);
      }
      return conn.open;
    });
    if (!valid) return Lost(conn, "malformed frame from the server: " + conn.reader.error());
    if (closed) return Lost(conn, "closed by the server");
    Flush(conn);
    MaybeFinish();
  }

  void OnReply(size_t c, std::string_view text, int64_t now_ns) {
    DriverConnection& conn = *conns_[c];
    uint64_t id = 0;
    if (!ParseId(text, &id))
      return Count(ErrorKind::kProtocol, "reply without an id: " + Short(text));
    const size_t s = id & (kMaxPipeline - 1);
    if (s >= conn.slots.size() || conn.slots[s].id != id) {
      // A late reply to a request already counted as a timeout is ignored;
      // anything else is an id the driver never sent.
      if ((id >> kSlotBits) > conn.sequence || s >= conn.slots.size()) {
        Count(ErrorKind::kProtocol, "reply to an unknown id: " + Short(text));
      }
      return;
    }
    DriverConnection::Slot& slot = conn.slots[s];
    slot.id = 0;
    --in_flight_;
    ++result_.ops;
    result_.latency.Record(std::chrono::nanoseconds(now_ns - slot.sent_ns));
    ReplyView view = MakeView(text);
    if (!view.ok) {
      last_refused_ = std::string(text);
      Count(ErrorKind::kRejected, "refused: " + Short(text));
      workload_->Failed(c, s, true);
    } else if (std::string wrong = workload_->Check(c, s, view); !wrong.empty()) {
      Count(ErrorKind::kMismatch, wrong);
    }
    Next(c, s, now_ns);
  }

  // The slot's request is over: a closed loop sends its next one now, an
  // open loop hands the slot to the next request due.
  void Next(size_t c, size_t s, int64_t now_ns) {
    if (!pacing_) return Issue(c, s, now_ns);
    if (!conns_[c]->slots[s].done && conns_[c]->open) free_slots_.push_back({c, s});
    Pace();
  }

  // Open loop: sends every request due by now on free slots (last freed
  // first), then sleeps until the next one is due; with no free slot the
  // next reply calls it again.
  void Pace() {
    if (!pacing_) return;
    const int64_t now_ns = NowNs();
    const double ns_per_request = 1e9 / limits_.rate;
    for (;;) {
      if (issued_ >= limits_.max_ops || now_ns >= deadline_ns_) {
        CountUnsent(ns_per_request);
        pacing_ = false;
        pace_timer_.cancel();
        return MaybeFinish();
      }
      const int64_t due_ns = start_ns_ + int64_t(double(issued_) * ns_per_request);
      if (due_ns > now_ns) {
        starved_since_ns_ = kNotStarved;  // on schedule again
        return WakeAt(due_ns);
      }
      if (free_slots_.empty()) {
        starved_since_ns_ = std::min(starved_since_ns_, now_ns);
        // Every slot busy: the next reply calls again. None busy either:
        // every slot is done or lost, and nothing more can be sent.
        if (in_flight_ == 0) {
          pacing_ = false;
          MaybeFinish();
        }
        return;
      }
      const auto [c, s] = free_slots_.back();
      free_slots_.pop_back();
      const uint64_t before = issued_;
      Issue(c, s, due_ns);
      if (issued_ == before) continue;  // the slot had nothing more to send
      if (now_ns - due_ns > kLateSendNs) CountLate(due_ns, 1);
      Flush(*conns_[c]);
    }
  }

  // Calls Pace when `due_ns` comes. Each reply calls Pace, so the timer is
  // set again only when the due time changed: a timerfd_settime per reply
  // was the open loop's largest cost at low rates.
  void WakeAt(int64_t due_ns) {
    if (timer_due_ns_ == due_ns) return;
    timer_due_ns_ = due_ns;
    pace_timer_.expires_at(SteadyClock::time_point(std::chrono::nanoseconds(due_ns)));
    pace_timer_.async_wait([this](const asio::error_code& ec) {
      if (ec) return;  // set again for another time, or the run ended
      timer_due_ns_ = kNotArmed;
      Pace();
    });
  }

  // `n` requests due from `due_ns` on went out late (or never). They waited
  // for a slot when every slot was busy before they were late; otherwise
  // the client's thread was behind.
  void CountLate(int64_t due_ns, uint64_t n) {
    result_.sent_late += n;
    if (starved_since_ns_ <= due_ns + kLateSendNs) result_.late_waiting_for_slot += n;
  }

  // The open loop stopped at the cap: requests due by then that never went
  // out are late too (a client that fell far behind must not look on time).
  void CountUnsent(double ns_per_request) {
    if (issued_ >= limits_.max_ops) return;
    result_.capped = true;
    const double span = double(std::min(NowNs(), deadline_ns_) - start_ns_ - kLateSendNs);
    if (span < 0) return;
    const uint64_t due = std::min<uint64_t>(limits_.max_ops, uint64_t(span / ns_per_request) + 1);
    if (due > issued_) {
      CountLate(start_ns_ + int64_t(double(issued_) * ns_per_request), due - issued_);
    }
  }

  // The connection is gone: its requests in flight are lost.
  void Lost(DriverConnection& conn, const std::string& why) {
    if (!conn.open) return;
    conn.open = false;
    asio::error_code ignored;
    conn.socket.close(ignored);
    const size_t c = conn.index;
    for (size_t s = 0; s < conn.slots.size(); ++s) {
      auto& slot = conn.slots[s];
      slot.done = true;
      if (slot.id == 0) continue;
      slot.id = 0;
      --in_flight_;
      ++result_.ops;
      Count(ErrorKind::kClose, "connection " + std::to_string(c) + ": " + why);
      if (workload_ != nullptr) workload_->Failed(c, s, false);
    }
    MaybeFinish();
  }

  void ScheduleSweep() {
    timer_.expires_after(kSweepPeriod);
    timer_.async_wait([this](const asio::error_code& ec) {
      if (ec || workload_ == nullptr) return;
      Sweep();
      if (in_flight_ > 0 || pacing_) ScheduleSweep();
    });
  }

  // Times out overdue requests and notices the cap while replies are slow.
  void Sweep() {
    const int64_t now_ns = NowNs();
    const int64_t timeout_ns = std::chrono::nanoseconds(options_.timeout).count();
    for (size_t c = 0; c < conns_.size(); ++c) {
      DriverConnection& conn = *conns_[c];
      for (size_t s = 0; s < conn.slots.size(); ++s) {
        auto& slot = conn.slots[s];
        if (slot.id == 0 || now_ns - slot.sent_ns < timeout_ns) continue;
        slot.id = 0;
        --in_flight_;
        ++result_.ops;
        Count(ErrorKind::kTimeout, "no reply within " + std::to_string(options_.timeout.count()) +
                                       " ms on connection " + std::to_string(c));
        workload_->Failed(c, s, false);
        Next(c, s, now_ns);
      }
      Flush(conn);
    }
    MaybeFinish();
  }

  void MaybeFinish() {
    if (in_flight_ == 0 && !pacing_ && workload_ != nullptr) io_.stop();
  }

  void Count(ErrorKind kind, const std::string& what) {
    ++result_.errors[static_cast<size_t>(kind)];
    if (result_.first_error.empty()) {
      result_.first_error = std::string(ErrorKindName(kind)) + ": " + what;
    }
  }

  static std::string Short(std::string_view text) {
    return std::string(text.substr(0, 200)) + (text.size() > 200 ? "..." : "");
  }

  const DriverOptions options_;
  const bool sequential_;  // see RunSequential
  asio::io_context io_{1};
  asio::steady_timer timer_;
  asio::steady_timer pace_timer_;                    // open loop: when the next request is due
  std::unique_ptr<asio::ssl::context> tls_context_;  // null: plain ws://
  std::vector<std::unique_ptr<DriverConnection>> conns_;
  ws::MaskKeys mask_keys_;
  // The current run.
  Workload* workload_ = nullptr;
  RunLimits limits_;
  RunResult result_;
  uint64_t issued_ = 0;
  uint64_t in_flight_ = 0;
  bool pacing_ = false;  // an open loop still sending
  // Open loop: since when a request has been due with every slot busy
  // (kNotStarved while the schedule is kept).
  int64_t starved_since_ns_ = kNotStarved;
  int64_t timer_due_ns_ = kNotArmed;  // when pace_timer_ calls Pace; kNotArmed: never
  std::vector<std::pair<size_t, size_t>> free_slots_;  // open loop: (conn, slot)
  int64_t start_ns_ = 0;
  int64_t deadline_ns_ = 0;
  size_t only_conn_ = SIZE_MAX;
  std::string body_;
  std::string payload_;
  std::string last_refused_;
};

Result<std::unique_ptr<LoadDriver>> LoadDriver::Connect(const DriverOptions& options) {
  auto impl = std::make_unique<Impl>(options);
  SKIFF_RETURN_IF_ERROR(impl->Open());
  return std::unique_ptr<LoadDriver>(new LoadDriver(std::move(impl)));
}

LoadDriver::LoadDriver(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
LoadDriver::~LoadDriver() = default;

RunResult LoadDriver::Run(Workload& workload, const RunLimits& limits) {
  return impl_->Run(workload, limits);
}

Result<std::string> LoadDriver::Call(std::string_view body) { return impl_->CallOn(0, body); }

const DriverOptions& LoadDriver::options() const { return impl_->options(); }

size_t LoadDriver::open_connections() const { return impl_->open_connections(); }

}  // namespace skiff::bench
