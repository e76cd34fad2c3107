// TcpFleet: thousands of plain TCP client connections on one thread and one
// epoll instance, for the fan-out family's peers that speak their own
// protocol over TCP (Redis RESP, NATS). What ws_fleet.h is for WebSocket
// servers, without framing: the owner parses what each connection received
// and says how many bytes it consumed.
//
// Not thread-safe: one thread owns a fleet.
#ifndef SKIFF_SUPPORT_FANOUT_TCP_FLEET_H_
#define SKIFF_SUPPORT_FANOUT_TCP_FLEET_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace skiff::bench {

class TcpFleet {
 public:
  // Bytes received on connection `conn` and not consumed yet (the view is
  // valid during the call only); returns how many of them it consumed.
  using OnBytes = std::function<size_t(size_t conn, std::string_view in)>;

  explicit TcpFleet(OnBytes on_bytes);
  ~TcpFleet();  // closes every connection
  TcpFleet(const TcpFleet&) = delete;
  TcpFleet& operator=(const TcpFleet&) = delete;

  // Connects `n` more connections to 127.0.0.1:`port`, at most
  // `max_pending` in flight at once, and returns how many are open once
  // each is connected or failed, or at `timeout`. They are numbered from
  // size() before the call.
  size_t Open(uint16_t port, size_t n, std::chrono::milliseconds timeout,
              size_t max_pending = std::numeric_limits<size_t>::max());

  // Queues `bytes` on connection `i` and writes what its socket takes now;
  // false when the connection is closed.
  bool Send(size_t i, std::string_view bytes);

  // Runs the loop until done() holds (checked after every batch of events)
  // or `timeout` passed; false on timeout.
  bool RunUntil(const std::function<bool()>& done, std::chrono::nanoseconds timeout);

  // Closes every connection now.
  void CloseAll();

  size_t size() const { return conns_.size(); }
  size_t open() const { return open_; }
  bool is_open(size_t i) const;
  // Connections the server closed or reset, or that failed to connect.
  uint64_t lost() const { return lost_; }
  const std::string& first_error() const { return first_error_; }

 private:
  struct Conn;
  void StartOne(uint16_t port);
  void Handle(size_t i, uint32_t events);
  void OnReadable(size_t i);
  void OnWritable(size_t i);
  void WatchWrite(size_t i, bool want_write);
  void Finish(size_t i, bool lost, const std::string& why);

  OnBytes on_bytes_;
  int epoll_fd_ = -1;
  std::vector<std::unique_ptr<Conn>> conns_;
  size_t open_ = 0;
  size_t pending_ = 0;  // connecting
  uint64_t lost_ = 0;
  std::string first_error_;
  std::unique_ptr<char[]> read_buffer_;
};

}  // namespace skiff::bench

#endif  // SKIFF_SUPPORT_FANOUT_TCP_FLEET_H_
