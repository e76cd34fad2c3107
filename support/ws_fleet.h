// Fleet: thousands of WebSocket client connections driven by one thread on
// one epoll instance, for the families that hold many connections open
// (connections at scale, held waits). Far leaner per connection than the
// SDK's client (a thread and a websocketpp connection each), so the load
// side is not what limits how many connections a case can hold, and its
// CPU time is the calling thread's alone.
//
// Frames are read and written with the frame codec the server uses
// (src/ws), in the client role: every server frame is checked as RFC 6455
// asks of a client. With UseTls, every connection opened after it speaks
// TLS (OpenSSL, a non-blocking client session per connection on the same
// loop; the server's chain and name verified) and its TLS handshake comes
// before the WebSocket upgrade. Not thread-safe: one thread owns a fleet.
#ifndef SKIFF_SUPPORT_WS_FLEET_H_
#define SKIFF_SUPPORT_WS_FLEET_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <queue>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

#include "ws/frame.h"

typedef struct ssl_ctx_st SSL_CTX;

namespace skiff::bench {

// What a TLS fleet trusts and checks.
struct FleetTls {
  std::string ca_file;  // PEM roots the server's chain must lead to
  // Checked against the server's certificate (a DNS name or an IP
  // address); a name is also sent as SNI.
  std::string server_name = "localhost";
};

struct FleetOpenReport {
  size_t opened = 0;
  size_t failed = 0;
  std::string first_error;  // of the first connection that failed, if any
  std::chrono::nanoseconds elapsed{0};
};

class Fleet {
 public:
  using Clock = std::chrono::steady_clock;
  // A text message connection `conn` received; the view is valid during
  // the call only.
  using OnText = std::function<void(size_t conn, std::string_view payload)>;
  // A wake set by WakeAt is due.
  using OnWake = std::function<void(size_t conn)>;

  explicit Fleet(OnText on_text, OnWake on_wake = nullptr);
  ~Fleet();  // closes every connection
  Fleet(const Fleet&) = delete;
  Fleet& operator=(const Fleet&) = delete;

  // Makes every connection opened after it speak TLS, and has the process
  // ignore SIGPIPE (OpenSSL writes to the socket with write(2)).
  // bad_request when the CA file cannot be read as PEM certificates or the
  // name is empty.
  Status UseTls(const FleetTls& tls);
  bool tls() const { return tls_ctx_ != nullptr; }

  // Opens `n` more connections to 127.0.0.1:`port` and returns once each
  // is open or failed, or at `timeout`. By default all at once (every
  // connect and handshake in flight together, as an accept storm does);
  // with `max_pending`, at most that many connecting or handshaking at a
  // time, so a server's accept queue of that size never overflows.
  // Connections are numbered from size() before the call, n of them (any
  // not started by the timeout count as failed).
  FleetOpenReport Open(uint16_t port, size_t n, std::chrono::milliseconds timeout,
                       size_t max_pending = std::numeric_limits<size_t>::max());

  // Queues one text frame on connection `i` and writes what its socket
  // takes now (the rest when it can); false when the connection is closed.
  bool Send(size_t i, std::string_view text);
  // Calls on_wake(i) once `when` has come (the loop runs it then).
  void WakeAt(size_t i, Clock::time_point when);

  // Runs the loop until done() holds (checked after every batch of events
  // and wakes) or `timeout` passed; false on timeout.
  bool RunUntil(const std::function<bool()>& done, std::chrono::nanoseconds timeout);
  void RunFor(std::chrono::nanoseconds d) {
    RunUntil([] { return false; }, d);
  }

  // Sends a close frame on every open connection and waits (up to
  // `timeout`) for the server to end them.
  void CloseAll(std::chrono::milliseconds timeout);

  size_t size() const { return conns_.size(); }
  // Connections open now (TLS and WebSocket handshakes done, not closed by
  // either side).
  size_t open() const { return open_; }
  bool is_open(size_t i) const;
  // Connections the server closed or reset (not by CloseAll).
  uint64_t lost() const { return lost_; }
  // Frames from the server that broke RFC 6455 (the connection is closed).
  uint64_t protocol_errors() const { return protocol_errors_; }

 private:
  struct Conn;
  // Adds one connection and starts its connect; a connection that cannot
  // start is added closed.
  void StartOne(uint16_t port);
  void Handle(size_t i, uint32_t events);
  // Starts (or goes on with) connection i's TLS handshake once its TCP
  // connect is done; the WebSocket request follows when it completes.
  void StartTls(size_t i);
  void ContinueTls(size_t i);
  void OnReadable(size_t i);
  void OnWritable(size_t i);
  void Finish(size_t i, bool lost, std::string why);
  void Watch(size_t i, bool want_write);
  void FireDueWakes(Clock::time_point now);

  OnText on_text_;
  OnWake on_wake_;
  int epoll_fd_ = -1;
  SSL_CTX* tls_ctx_ = nullptr;  // null: plain connections
  std::string tls_name_;
  bool tls_name_is_ip_ = false;
  std::vector<std::unique_ptr<Conn>> conns_;
  size_t open_ = 0;
  size_t pending_ = 0;  // connecting or handshaking
  uint64_t lost_ = 0;
  uint64_t protocol_errors_ = 0;
  bool closing_ = false;
  std::string first_error_;
  ws::MaskKeys keys_;
  std::unique_ptr<char[]> read_buffer_;
  using Wake = std::pair<Clock::time_point, size_t>;
  std::priority_queue<Wake, std::vector<Wake>, std::greater<>> wakes_;
};

// Raises this process's descriptor limit to its hard limit; returns the
// limit now in force.
uint64_t RaiseDescriptorLimit();

}  // namespace skiff::bench

#endif  // SKIFF_SUPPORT_WS_FLEET_H_
