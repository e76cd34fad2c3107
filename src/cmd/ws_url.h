// The one reader of the CLI's server URLs (`skiff call --url`, `skiff health
// --url`): "ws://HOST:PORT" or "wss://HOST:PORT", with an optional trailing
// "/" (the server serves nothing else). HOST is a name, an IPv4 address or a
// bracketed IPv6 one. Pure; thread-safe.
#ifndef SKIFF_CMD_WS_URL_H_
#define SKIFF_CMD_WS_URL_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace skiff::cmd {

struct WsUrl {
  std::string host;  // without an IPv6 literal's brackets
  uint16_t port = 0;
  bool tls = false;  // wss://
};

// bad_request saying what is wrong: another scheme, no host, a missing or
// bad port, a path.
Result<WsUrl> ParseWsUrl(std::string_view url);

}  // namespace skiff::cmd

#endif  // SKIFF_CMD_WS_URL_H_
