#include "cmd/health.h"

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

}  // namespace

std::string DefaultHealthUrl(std::string_view address, std::string_view port, bool tls) {
  std::string host(address);
  if (host.empty() || host == "0.0.0.0") {
    host = "127.0.0.1";
  } else if (host == "::") {
    host = "[::1]";
  } else if (host.find(':') != std::string::npos && host.front() != '[') {
    host = "[" + host + "]";  // an IPv6 address
  }
  return (tls ? "wss://" : "ws://") + host + ":" + std::string(port.empty() ? "7420" : port) + "/";
}

CLI::App* AddHealthCommand(CLI::App& app, HealthRequest& r) {
  CLI::App* health = app.add_subcommand(
      "health",
      "Pings a running skiffd; exits 0 when it answers, 1 when not, 2 for bad usage. A "
      "container's HEALTHCHECK runs it.");
  health
      ->add_option("--url", r.url,
                   "the server (default: the one $SKIFF_ADDRESS and $SKIFF_PORT name, else "
                   "ws://127.0.0.1:7420/; wss:// when $SKIFF_TLS_CERT is set)")
      ->type_name("URL");
  health
      ->add_option("--tls-ca", r.tls_ca,
                   "wss://: trust the server's certificate when it chains to these PEM roots "
                   "(default: the system's store)")
      ->type_name("FILE");
  health->add_flag("--insecure", r.insecure,
                   "wss://: do not check the server's certificate (the default URL over TLS "
                   "does not: it asks loopback in the server's own container)");
  health->add_option("--timeout-ms", r.timeout_ms, "how long to wait for the answer")
      ->type_name("MS")
      ->transform(WholeNumber())
      ->check(CLI::Range(uint64_t{1}, uint64_t{3600 * 1000}))
      ->capture_default_str();
  return health;
}

int RunHealth(const HealthRequest& r) {
  std::string url = r.url;
  bool insecure = r.insecure;
  if (url.empty()) {
    const char* env_address = std::getenv("SKIFF_ADDRESS");
    const char* env_port = std::getenv("SKIFF_PORT");
    const char* env_cert = std::getenv("SKIFF_TLS_CERT");
    const bool tls = env_cert != nullptr && *env_cert != '\0';
    url = DefaultHealthUrl(env_address != nullptr ? env_address : "",
                           env_port != nullptr ? env_port : "", tls);
    // Loopback in the server's own container (see health.h).
    insecure = insecure || (tls && r.tls_ca.empty());
  }
  const uint64_t timeout_ms = r.timeout_ms;
  auto address = ParseWsUrl(url);
  if (!address.ok()) {
    std::fprintf(stderr, "skiff health: %s\n", address.status().message().c_str());
    return kHealthUsageExit;
  }

  if (!address->tls && (!r.tls_ca.empty() || r.insecure)) {
    std::fprintf(stderr, "skiff health: --tls-ca and --insecure need a wss:// URL\n");
    return kHealthUsageExit;
  }
  client::ClientOptions options;
  options.host = address->host;
  options.port = address->port;
  options.tls = address->tls;
  options.tls_ca_file = r.tls_ca;
  options.tls_insecure = insecure;
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
