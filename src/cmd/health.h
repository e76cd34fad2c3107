// `skiff health`: whether a skiffd answers on its WebSocket port.
//
// A container's HEALTHCHECK runs it: a FROM-scratch image has no shell or
// curl, so the check is the admin CLI itself. It connects with the client
// SDK, sends one ping and prints one line. Pure functions and one blocking
// call; thread-compatible.
#ifndef SKIFF_CMD_HEALTH_H_
#define SKIFF_CMD_HEALTH_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "base/status.h"
#include "cmd/ws_url.h"

namespace skiff::cmd {

// The URL `skiff health` asks when given none: the server skiffd would run
// with these values of SKIFF_ADDRESS and SKIFF_PORT (empty when unset), over
// wss:// when `tls` (SKIFF_TLS_CERT is set). A wildcard or unset address
// becomes loopback; an unset port is 7420. A port set only in a config file
// is not seen: pass --url then.
std::string DefaultHealthUrl(std::string_view address, std::string_view port, bool tls = false);

// What `skiff health` was asked.
struct HealthRequest {
  std::string url;     // empty: DefaultHealthUrl() of $SKIFF_ADDRESS, $SKIFF_PORT, $SKIFF_TLS_CERT
  std::string tls_ca;  // wss://: PEM roots; empty: the system's store
  bool insecure = false;  // wss://: no certificate check
  uint64_t timeout_ms = 3000;
};

// Exit code of `skiff health` for bad usage. Not 64: the command's codes
// predate the other programs' and a HEALTHCHECK only tells 0 from the rest.
inline constexpr int kHealthUsageExit = 2;

// Adds the `health` command and its table of options to skiff's `app`,
// bound to `request`.
CLI::App* AddHealthCommand(CLI::App& app, HealthRequest& request);

// Pings the server. Without a URL it asks DefaultHealthUrl() of the
// process's own SKIFF_ADDRESS, SKIFF_PORT and SKIFF_TLS_CERT, so a
// container's HEALTHCHECK follows a port moved, or TLS turned on, by the
// environment. That default over TLS does not check the certificate: it
// asks loopback, in the server's own container, whether the server answers
// (which a certificate for the server's public name could not vouch for);
// a check from elsewhere passes --url and --tls-ca. Returns the exit status: 0 when
// the server answered the ping, 1 when it did not (refused, timed out, an
// error reply), kHealthUsageExit for a URL that is not ws:// or wss://HOST:PORT.
// Prints one line: on stdout when healthy, else on stderr.
int RunHealth(const HealthRequest& request);

}  // namespace skiff::cmd

#endif  // SKIFF_CMD_HEALTH_H_
