// LoadDriver: the end-to-end suite's load generator. C WebSocket connections
// to one server, each keeping up to P requests in flight, driven by a
// Workload that writes requests and judges replies.
//
// It speaks the v1 wire directly over Asio (handshake, masked text frames,
// ids; over TLS when the options say so, see support/driver_tls.h) instead
// of going through the SDK, so that what limits a pipelined run
// is the server and not the client: replies are matched by id with a
// substring scan, never parsed into a tree unless a workload asks.
// Everything happens on the thread that calls Run (or Call); that thread's
// CPU time is the client's share of a run.
//
// Not thread-safe: one thread owns a driver and calls it in turn.
#ifndef SKIFF_SUPPORT_LOAD_DRIVER_H_
#define SKIFF_SUPPORT_LOAD_DRIVER_H_

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"
#include "support/latency.h"

namespace skiff::bench {

struct DriverOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 0;
  // Every connection logs in as `user` before the run; empty = stays out.
  std::string user;
  std::string secret;
  size_t connections = 16;
  size_t pipeline = 32;  // requests in flight per connection (at most 4096)
  // A request without a reply this long after it was sent is a timeout.
  std::chrono::milliseconds timeout{10000};
  // wss://: every connection speaks TLS. The server's chain must lead to a
  // root in the PEM file `tls_ca` (empty: the system store) and name
  // `host` (a DNS name, also sent as SNI, or an IP address).
  bool tls = false;
  std::string tls_ca;
  // Tests only: TLS that accepts any certificate, unchecked.
  bool insecure = false;
};

// How a failed request failed.
enum class ErrorKind { kTimeout, kClose, kRejected, kMismatch, kProtocol, kCount };
const char* ErrorKindName(ErrorKind kind);

// One reply as the workload sees it: the frame's text, and the error code
// when the server refused ("ok":false).
struct ReplyView {
  std::string_view text;
  bool ok = false;
  std::string_view error_code;
};

// A scenario's requests. Each (connection, slot) pair runs one request at a
// time, so a workload can keep a per-slot chain of dependent operations
// (set, then get what was set) while the slots of a connection pipeline.
// Called only on the driver's thread.
class Workload {
 public:
  virtual ~Workload() = default;
  // Appends the next request's members after the id (for example
  // `"op":"get","table":"t","key":"k"`) to `body`. False when the slot
  // has nothing more to do.
  virtual bool Next(size_t conn, size_t slot, std::string& body) = 0;
  // Judges an "ok":true reply to the slot's last request. Empty when right,
  // else what was wrong (counted as a mismatch).
  virtual std::string Check(size_t conn, size_t slot, const ReplyView& reply) = 0;
  // The slot's last request failed (refused, timed out, connection lost);
  // its effect on the server is unknown unless `refused`.
  virtual void Failed(size_t conn, size_t slot, bool refused) {
    (void)conn, (void)slot, (void)refused;
  }
};

// How far past its due time an open-loop request may go out before it is
// late: a few scheduler ticks, and a tenth of the suite's p99 bound.
inline constexpr std::chrono::milliseconds kLateSend{1};

struct RunLimits {
  uint64_t max_ops = UINT64_MAX;  // requests sent at most
  // Wall-time budget, checked before each request is sent; requests in
  // flight at the cap still get their reply (or their timeout).
  std::chrono::nanoseconds cap = std::chrono::seconds(25);
  // Requests per second over all connections; 0 is a closed loop (each
  // slot sends its next request when its reply came). Above 0 the run is
  // open-loop, as wrk2 drives a server: request k is due at start + k/rate
  // whatever the replies, goes out on the next free slot, and its latency
  // is measured from when it was due, so a stall of the server shows in
  // the latency of every request it delayed instead of being hidden by a
  // client that waited (coordinated omission).
  double rate = 0;
  // Whether to read this thread's CPU time at the start and end (two
  // system calls): a one-request call (LoadDriver::Call) skips them.
  bool client_cpu = true;
};

struct RunResult {
  uint64_t ops = 0;  // requests that completed, with a reply or an error
  std::array<uint64_t, static_cast<size_t>(ErrorKind::kCount)> errors{};
  std::string first_error;  // the first failure, for the verdict message
  double wall_seconds = 0;
  double client_cpu_seconds = 0;  // CPU of the driving thread during the run
  bool capped = false;            // the cap stopped the run before its work ended
  // Open-loop runs: requests that went out more than kLateSend after they
  // were due (their latency counts the wait), or were due before the cap
  // and never went out. Of those, `late_waiting_for_slot` waited because every
  // slot had a request in flight since before they were late (the server's
  // backlog, or a pool too small for the rate); the rest waited for the
  // client's own thread, which fell behind its schedule.
  uint64_t sent_late = 0;
  uint64_t late_waiting_for_slot = 0;
  uint64_t slots = 0;  // slots of the connections open when the run began
  LatencyRecorder latency;

  uint64_t late_on_client() const { return sent_late - late_waiting_for_slot; }
  uint64_t error_count() const;
  uint64_t errors_of(ErrorKind kind) const { return errors[static_cast<size_t>(kind)]; }
};

class LoadDriver {
 public:
  // Opens every connection (TCP_NODELAY, WebSocket handshake, login when a
  // user is set). unavailable when the server cannot be reached or refuses.
  static Result<std::unique_ptr<LoadDriver>> Connect(const DriverOptions& options);
  ~LoadDriver();
  LoadDriver(const LoadDriver&) = delete;
  LoadDriver& operator=(const LoadDriver&) = delete;

  // Runs `workload` until every slot is done, max_ops were sent or the cap
  // passed, then waits for the replies still in flight.
  RunResult Run(Workload& workload, const RunLimits& limits);

  // One request on connection 0 and its whole reply frame (including
  // "ok":false replies); unavailable on timeout or a lost connection.
  Result<std::string> Call(std::string_view body);

  const DriverOptions& options() const;
  // Connections still open.
  size_t open_connections() const;

 private:
  class Impl;
  explicit LoadDriver(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Appends `s` as a JSON string literal (quotes and escapes included).
void AppendJsonString(std::string& out, std::string_view s);

// The JSON text after `"name":` in a flat reply object, up to the reply's
// closing brace when `name` is its last member; empty when absent. Replies
// are written by the server in a fixed member order (id, ok, then the op's
// fields), which is what lets reads be checked without a parser.
std::string_view ReplyMember(std::string_view reply, std::string_view name);
// The text of the last member `name` up to the reply's closing brace.
std::string_view LastReplyMember(std::string_view reply, std::string_view name);

}  // namespace skiff::bench

#endif  // SKIFF_SUPPORT_LOAD_DRIVER_H_
