#include "cmd/health.h"

#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "client/client.h"
#include "cmd/command_line.h"

namespace skiff::cmd {
namespace {

// Exit statuses; a HEALTHCHECK treats anything but 0 as unhealthy.
constexpr int kHealthy = 0;
constexpr int kUnhealthy = 1;

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

CLI::App* AddHealthCommand(CLI::App& app, HealthRequest& r) {
  CLI::App* health = app.add_subcommand(
      "health",
      "Pings a running skiffd; exits 0 when it answers, 1 when not, 2 for bad usage. A "
      "container's HEALTHCHECK runs it.");
  health
      ->add_option("--url", r.url,
                   "the server (default: the one $SKIFF_ADDRESS and $SKIFF_PORT name, else "
                   "ws://127.0.0.1:7420/)")
      ->type_name("ws://HOST:PORT/");
  health->add_option("--timeout-ms", r.timeout_ms, "how long to wait for the answer")
      ->type_name("MS")
      ->transform(WholeNumber())
      ->check(CLI::Range(uint64_t{1}, uint64_t{3600 * 1000}))
      ->capture_default_str();
  return health;
}

int RunHealth(const HealthRequest& r) {
  std::string url = r.url;
  if (url.empty()) {
    const char* env_address = std::getenv("SKIFF_ADDRESS");
    const char* env_port = std::getenv("SKIFF_PORT");
    url = DefaultHealthUrl(env_address != nullptr ? env_address : "",
                           env_port != nullptr ? env_port : "");
  }
  const uint64_t timeout_ms = r.timeout_ms;
  auto address = ParseWsUrl(url);
  if (!address.ok()) {
    std::fprintf(stderr, "skiff health: %s\n", address.status().message().c_str());
    return kHealthUsageExit;
  }

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
