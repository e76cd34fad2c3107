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

#include "base/status.h"

namespace skiff::cmd {

struct WsAddress {
  std::string host;  // as written in the URL; an IPv6 literal keeps its brackets
  uint16_t port = 0;
};

// Parses "ws://HOST:PORT" with an optional trailing "/". bad_request for
// anything else (another scheme, a missing or bad port, a path).
Result<WsAddress> ParseWsUrl(std::string_view url);

// The URL `skiff health` asks when given none: the server skiffd would run
// with these values of SKIFF_ADDRESS and SKIFF_PORT (empty when unset). A
// wildcard or unset address becomes loopback; an unset port is 7420. A port
// set only in a config file is not seen: pass --url then.
std::string DefaultHealthUrl(std::string_view address, std::string_view port);

// Runs `skiff health [--url URL] [--timeout-ms MS]`; `args` are the words
// after "health". Without --url it asks DefaultHealthUrl() of the process's
// own SKIFF_ADDRESS and SKIFF_PORT, so a container's HEALTHCHECK follows a
// port moved by the environment. Returns the exit status: 0 when the server answered the
// ping, 1 when it did not (refused, timed out, an error reply), 2 for bad
// usage. Prints one line: on stdout when healthy, else on stderr.
int RunHealth(const std::vector<std::string>& args);

}  // namespace skiff::cmd

#endif  // SKIFF_CMD_HEALTH_H_
