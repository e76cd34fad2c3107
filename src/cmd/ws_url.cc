#include "cmd/ws_url.h"

#include <charconv>
#include <string>

namespace skiff::cmd {

Result<WsUrl> ParseWsUrl(std::string_view url) {
  auto bad = [url](const std::string& why) -> Result<WsUrl> {
    return BadRequest("'" + std::string(url) + "' " + why);
  };
  WsUrl out;
  std::string_view rest = url;
  if (rest.substr(0, 6) == "wss://") {
    out.tls = true;
    rest.remove_prefix(6);
  } else if (rest.substr(0, 5) == "ws://") {
    rest.remove_prefix(5);
  } else {
    return bad("is not a ws:// or wss:// URL");
  }
  if (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  if (rest.find('/') != std::string_view::npos) return bad("has a path; the server serves only /");
  // The port follows the last ':' after a bracketed IPv6 literal's ']'.
  const size_t colon = rest.rfind(':');
  const size_t bracket = rest.rfind(']');
  if (colon == std::string_view::npos || colon == 0 ||
      (bracket != std::string_view::npos && colon < bracket)) {
    return bad("has no host:port");
  }
  const std::string_view port_text = rest.substr(colon + 1);
  unsigned port = 0;
  const auto [end, ec] =
      std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || end != port_text.data() + port_text.size() || port == 0 ||
      port > 65535) {
    return bad("has no port from 1 to 65535");
  }
  std::string_view host = rest.substr(0, colon);
  if (host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') return bad("has a bad IPv6 address");
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string_view::npos) {
    return bad("has an IPv6 address without its brackets");
  }
  out.host = std::string(host);
  out.port = static_cast<uint16_t>(port);
  return out;
}

}  // namespace skiff::cmd
