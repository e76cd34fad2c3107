// ClientOptions: how a Client connects, pools connections and times out.
// A plain value; thread-compatible.
#ifndef SKIFF_CLIENT_CLIENT_OPTIONS_H_
#define SKIFF_CLIENT_CLIENT_OPTIONS_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "base/clock.h"

namespace skiff::client {

struct ClientOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 7420;
  // wss:// instead of ws://. The server's certificate chain is checked
  // against `tls_ca_file` (PEM; empty: the system's store) and its name or
  // IP address against `host`, with SNI, over TLS 1.2 or later; a failed
  // check fails Connect with unavailable and the reason ("certificate
  // verify failed: hostname mismatch").
  bool tls = false;
  std::string tls_ca_file;
  // Skips both checks, so anyone on the path can read and change the
  // traffic. For tests against throwaway certificates only.
  bool tls_insecure = false;
  // Connections in the pool; requests are spread over them.
  size_t connections = 1;
  // Requests one connection pipelines before further ones wait in its queue.
  size_t max_in_flight = 32;
  // A request without a reply this long after it was made fails with
  // unavailable (its late reply, if any, is dropped).
  std::chrono::milliseconds request_timeout{10000};
  // Connect() gives up after this long.
  std::chrono::milliseconds connect_timeout{5000};
  // When `user` is set, every connection logs in before carrying requests.
  std::string user;
  std::string secret;
  // Reopen a connection that closed (and log in again); requests queued
  // meanwhile go out once it is back, unless they time out first.
  bool reconnect = true;
  std::chrono::milliseconds reconnect_delay{100};
  // Where deadlines are read; nullptr = the system clock.
  const Clock* clock = nullptr;
};

}  // namespace skiff::client

#endif  // SKIFF_CLIENT_CLIENT_OPTIONS_H_
