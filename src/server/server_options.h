// ServerOptions: every setting of a Skiff server, with its default.
//
// skiffd fills it from flags, the environment and a config file; tests and
// benchmarks fill it directly. A plain value; thread-compatible.
#ifndef SKIFF_SERVER_SERVER_OPTIONS_H_
#define SKIFF_SERVER_SERVER_OPTIONS_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/logger.h"
#include "server/auth/token_verifier.h"
#include "server/tls_context.h"

namespace skiff::server {

enum class Durability {
  // A write is acknowledged after the store transaction holding it committed.
  kCommit,
  // A write is acknowledged once applied in memory and reaches the store
  // within `flush_interval`; a crash may lose that window.
  kMemory,
};

std::string_view DurabilityName(Durability d);
// "commit" or "memory"; nullopt otherwise.
std::optional<Durability> DurabilityFromName(std::string_view name);

struct ServerOptions {
  // Address to listen on; 127.0.0.1 keeps the server off the network.
  std::string address = "127.0.0.1";
  // 0 picks a free ephemeral port (Server::port() reports it).
  uint16_t port = 7420;
  // Threads running an I/O loop each; 0 lets the server choose (one on two
  // cores, else one per two cores).
  size_t io_threads = 0;
  // A pass writing to many connections (a watched change, woken waits, the
  // replies of one turn) hands its sends to the kernel in one io_uring
  // submission when the kernel allows it; false: one sendmsg each.
  bool io_uring = true;
  // Used by skiffd only: in-process users pass their own Store.
  std::string store_url = "sqlite:./skiff.db";
  Durability durability = Durability::kCommit;
  // Upper bound on how long a write stays only in memory (memory durability).
  std::chrono::milliseconds flush_interval{100};
  // A text frame larger than this gets too_large and the connection is closed.
  size_t max_frame_bytes = 16 * 1024 * 1024;
  // Requests of one connection waiting for their commit. At the limit the
  // server stops reading that connection (TCP back-pressure) until replies
  // go out; a long pipeline is slowed, never refused.
  size_t max_in_flight = 1024;
  // A connection that sends nothing for this long is closed (0 = never);
  // one waiting for a commit or holding a sync wait is not idle.
  std::chrono::milliseconds idle_timeout{std::chrono::minutes(10)};
  // Connections open at once; one more is refused with HTTP 503. 0 = as
  // many as the descriptor limit allows (less a reserve for the store).
  size_t max_connections = 0;
  // The same per client address (0 = no limit of its own).
  size_t max_connections_per_address = 0;
  // Requests per second of one logged-in user over all its connections, on
  // average, with bursts of `user_burst` (a token bucket); more get
  // rate_limited. 0 = no limit.
  double user_rate = 0;
  size_t user_burst = 0;  // 0 = one second's worth of user_rate
  // Logged-in connections of one user at once; one more login gets
  // rate_limited. 0 = no limit.
  size_t max_connections_per_user = 0;
  // Failed logins from one address within `failed_login_window` before its
  // logins are refused (rate_limited, the secret not checked) for a window,
  // doubled with each block in a row. 0 = no limit.
  size_t max_failed_logins = 0;
  std::chrono::milliseconds failed_login_window{std::chrono::minutes(1)};
  // An opening handshake must complete within this time (and 8 KiB).
  std::chrono::milliseconds handshake_timeout{std::chrono::seconds(10)};
  // A frame must complete this long after its first byte arrived.
  std::chrono::milliseconds frame_timeout{std::chrono::seconds(30)};
  // A connection whose replies make no progress this long (its client
  // does not read) is closed.
  std::chrono::milliseconds send_timeout{std::chrono::seconds(30)};
  // Replies waiting on one connection; above it the connection is not
  // read until they drain (TCP back-pressure).
  size_t max_output_bytes = 1024 * 1024;
  // Buffered input and output of all connections together; above it a
  // connection holding buffered bytes is not read until they drain.
  size_t max_buffered_bytes = 256 * 1024 * 1024;
  // Memory tiers: idle time before a document is packed, then evicted from
  // memory (0 = never).
  std::chrono::milliseconds pack_after{std::chrono::seconds(120)};
  std::chrono::milliseconds evict_after{std::chrono::seconds(900)};
  // Nesting limit for request JSON (documents nest one level less).
  size_t max_depth = 64;
  // Memory durability: acknowledged writes not yet in the store are
  // bounded by size and by the age of the oldest; past either bound new
  // writes get unavailable until the store takes the backlog.
  size_t max_unflushed_bytes = 64 * 1024 * 1024;
  std::chrono::milliseconds max_unflushed_age{std::chrono::seconds(10)};
  // At a graceful stop, how long a failing store is retried before the
  // writes it has not taken are given up (and named in Stop's error).
  std::chrono::milliseconds stop_grace{std::chrono::seconds(30)};
  // Watches (docs/protocol.md, "watch / unwatch"): changes held for a
  // watch that resumes with `since` (count and bytes of their encoding);
  // watches open at once per connection and per server; a connection's
  // queued events coalesce per key past watch_coalesce_bytes, and past
  // watch_queue_bytes the watch ends with an overflow event.
  size_t watch_history = 10000;
  size_t watch_history_bytes = 16 * 1024 * 1024;
  size_t max_watches_per_connection = 64;
  size_t max_watches = 10000;
  size_t watch_coalesce_bytes = 256 * 1024;
  size_t watch_queue_bytes = 4 * 1024 * 1024;
  // HOST:PORT of a plain-HTTP listener of its own serving only GET /metrics
  // (port 0 picks a free one); the main port then answers /metrics with
  // 404. Empty = /metrics on the main port.
  std::string metrics_address;
  // Where the server reports what an operator should hear about (failed
  // sync commits, connection limits, a lost cluster link); it must outlive
  // the server. Null writes the same lines to stderr ("skiffd: <level>:").
  Logger* logger = nullptr;

  // Cluster mode (docs/cluster.md): several servers on one PostgreSQL
  // database, each serving the partitions it holds a lease on and
  // forwarding the rest to their owners. PostgreSQL and commit durability
  // only.
  bool cluster = false;
  // host:port where the other instances reach this one; empty = address
  // and port (127.0.0.1 when listening on every interface).
  std::string cluster_address;
  // What instances log in to each other with; the same on every instance.
  std::string cluster_secret;
  std::chrono::milliseconds cluster_lease{3000};
  // With TLS, the PEM roots the other instances' certificates must chain
  // to (empty = the system store); each certificate must name the host of
  // its instance's cluster address.
  std::string cluster_tls_ca_file;

  // Token sign-in (docs/deploy.md, "Token sign-in"): what skiffd's
  // --token-* settings say, and the verifier it builds from them at start
  // (auth::LoadTokenVerifier, which reads the key files). A login with a
  // token is checked by `token_verifier` alone; null = no token logins.
  auth::TokenSettings token;
  std::shared_ptr<const auth::TokenVerifier> token_verifier;

  // TLS (docs/deploy.md, "TLS"): with a certificate and key the port serves
  // wss:// and /healthz over TLS only. `tls_context`, when set, is used as
  // it is (skiffd loads it before opening the store, to fail fast); else
  // Start loads one from `tls` when tls.cert_file is set.
  TlsSettings tls;
  std::shared_ptr<TlsContext> tls_context;
};

}  // namespace skiff::server

#endif  // SKIFF_SERVER_SERVER_OPTIONS_H_
