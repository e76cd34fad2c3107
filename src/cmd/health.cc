#include "cmd/health.h"

#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "client/client.h"

namespace skiff::cmd {
namespace {

// Exit statuses; a HEALTHCHECK treats anything but 0 as unhealthy.
constexpr int kHealthy = 0;
constexpr int kUnhealthy = 1;
constexpr int kUsage = 2;

int Usage(const std::string& problem) {
  std::fprintf(stderr,
               "skiff health: %s\n"
               "usage: skiff health [--url ws://HOST:PORT/] [--timeout-ms MS]\n",
               problem.c_str());
  return kUsage;
}

bool ParseUnsigned(std::string_view text, uint64_t max, uint64_t* out) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty() || v > max) {
    return false;
  }
  *out = v;
  return true;
}

}  // namespace

Result<WsAddress> ParseWsUrl(std::string_view url) {
  constexpr std::string_view kScheme = "ws://";
  std::string_view rest = url;
  if (rest.substr(0, kScheme.size()) != kScheme) {
    return BadRequest("'" + std::string(url) + "' is not a ws:// URL");
  }
  rest.remove_prefix(kScheme.size());
  if (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  if (rest.find('/') != std::string_view::npos) {
    return BadRequest("'" + std::string(url) + "' has a path; the server serves only /");
  }
  // The port follows the last ':' after a bracketed IPv6 literal's ']'.
  size_t colon = rest.rfind(':');
  size_t bracket = rest.rfind(']');
  if (colon == std::string_view::npos || (bracket != std::string_view::npos && colon < bracket) ||
      colon == 0) {
    return BadRequest("'" + std::string(url) + "' has no host:port");
  }
  uint64_t port = 0;
  std::string_view port_text = rest.substr(colon + 1);
  if (!ParseUnsigned(port_text, 65535, &port) || port == 0) {
    return BadRequest("'" + std::string(port_text) + "' in '" + std::string(url) +
                      "' is not a port from 1 to 65535");
  }
  WsAddress address;
  address.host = std::string(rest.substr(0, colon));
  address.port = static_cast<uint16_t>(port);
  return address;
}

std::string DefaultHealthUrl(std::string_view address, std::string_view port) {
  std::string host(address);
  if (host.empty() || host == "0.0.0.0") {
    host = "127.0.0.1";
  } else if (host == "::") {
    host = "[::1]";
  } else if (host.find(':') != std::string::npos && host.front() != '[') {
    host = "[" + host + "]";  // an IPv6 address
  }
  return "ws://" + host + ":" + std::string(port.empty() ? "7420" : port) + "/";
}

int RunHealth(const std::vector<std::string>& args) {
  const char* env_address = std::getenv("SKIFF_ADDRESS");
  const char* env_port = std::getenv("SKIFF_PORT");
  std::string url = DefaultHealthUrl(env_address != nullptr ? env_address : "",
                                     env_port != nullptr ? env_port : "");
  uint64_t timeout_ms = 3000;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a != "--url" && a != "--timeout-ms") return Usage("unexpected argument '" + a + "'");
    if (i + 1 >= args.size()) return Usage(a + " needs a value");
    const std::string& value = args[++i];
    if (a == "--url") {
      url = value;
    } else if (!ParseUnsigned(value, 3600 * 1000, &timeout_ms) || timeout_ms == 0) {
      return Usage("--timeout-ms '" + value + "' is not a number of milliseconds");
    }
  }
  auto address = ParseWsUrl(url);
  if (!address.ok()) return Usage(address.status().message());

  client::ClientOptions options;
  options.host = address->host;
  options.port = address->port;
  options.connect_timeout = std::chrono::milliseconds(timeout_ms);
  options.request_timeout = std::chrono::milliseconds(timeout_ms);
  // One attempt: a health check that retried would hide a flapping server.
  options.reconnect = false;
  auto start = std::chrono::steady_clock::now();
  auto client = client::Client::Connect(options);
  Status status = client.ok() ? (*client)->Ping() : client.status();
  if (!status.ok()) {
    std::fprintf(stderr, "skiff health: %s: %s\n", url.c_str(), status.ToString().c_str());
    return kUnhealthy;
  }
  auto elapsed =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start);
  std::printf("skiff health: ok: %s answered ping in %.1f ms\n", url.c_str(), elapsed.count());
  return kHealthy;
}

}  // namespace skiff::cmd
