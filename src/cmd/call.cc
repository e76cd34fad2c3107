#include "cmd/call.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <CLI/CLI.hpp>

#include "client/client.h"
#include "doc/document.h"

namespace skiff::cmd {
namespace {

constexpr int kOk = 0;
constexpr int kRefused = 1;
constexpr int kUnreachable = 6;
constexpr int kUsage = 64;

std::string EnvOr(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}

// "ws://HOST:PORT[/]" -> host and port; false when it is not one.
bool ParseUrl(std::string url, std::string* host, uint16_t* port) {
  const std::string scheme = "ws://";
  if (url.rfind(scheme, 0) != 0) return false;
  url = url.substr(scheme.size());
  if (const size_t slash = url.find('/'); slash != std::string::npos) url.resize(slash);
  const size_t colon = url.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == url.size()) return false;
  const std::string digits = url.substr(colon + 1);
  if (digits.size() > 5 || digits.find_first_not_of("0123456789") != std::string::npos)
    return false;
  const unsigned long p = std::strtoul(digits.c_str(), nullptr, 10);
  if (p == 0 || p > 65535) return false;
  *host = url.substr(0, colon);
  *port = static_cast<uint16_t>(p);
  return true;
}

}  // namespace

const char kCallUsage[] =
    "  call OP [NAME=VALUE...] [--url ws://HOST:PORT] [--user NAME] [--secret HEX]\n"
    "      Sends one request to a running skiffd and prints the reply. VALUE is\n"
    "      JSON when it parses as JSON, else a string:\n"
    "        skiff call set table=notes key=a value='{\"text\":\"hi\"}'\n"
    "        skiff call get table=notes key=a\n"
    "        skiff call add table=counters key=c path='[\"n\"]' delta=1\n"
    "      --url defaults to $SKIFF_URL or ws://127.0.0.1:7420, --user and\n"
    "      --secret to $SKIFF_USER and $SKIFF_SECRET. Exit 0 when the reply is\n"
    "      ok, 1 when the server refused, 6 when it cannot be reached.\n";

int RunCall(const std::vector<std::string>& args) {
  CLI::App app("Sends one request to a running skiffd and prints the reply.", "skiff call");
  std::string url = EnvOr("SKIFF_URL", "ws://127.0.0.1:7420");
  std::string user = EnvOr("SKIFF_USER", "");
  std::string secret = EnvOr("SKIFF_SECRET", "");
  int timeout_ms = 10000;
  std::string op;
  std::vector<std::string> fields;
  app.add_option("--url", url, "the server (env SKIFF_URL)")->capture_default_str();
  app.add_option("--user", user, "log in as this user (env SKIFF_USER)");
  app.add_option("--secret", secret, "the user's secret (env SKIFF_SECRET)");
  app.add_option("--timeout", timeout_ms, "milliseconds to wait for the reply")
      ->check(CLI::Range(1, 3'600'000))
      ->capture_default_str();
  app.add_option("op", op, "the operation: ping, get, set, has, delete, add, merge, all, stats...")
      ->required();
  app.add_option("fields", fields, "NAME=VALUE members of the request");
  app.footer(kCallUsage);
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    std::fputs(app.help().c_str(), stdout);
    return kOk;
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "skiff call: %s\n", e.what());
    return kUsage;
  }
  doc::Value request = {{"op", op}};
  for (const std::string& field : fields) {
    const size_t eq = field.find('=');
    if (eq == std::string::npos || eq == 0) {
      std::fprintf(stderr, "skiff call: '%s' is not NAME=VALUE\n", field.c_str());
      return kUsage;
    }
    const std::string text = field.substr(eq + 1);
    Result<doc::Value> parsed = doc::Parse(text);
    request[field.substr(0, eq)] = parsed.ok() ? *parsed : doc::Value(text);
  }
  client::ClientOptions options;
  if (!ParseUrl(url, &options.host, &options.port)) {
    std::fprintf(stderr, "skiff call: --url takes ws://HOST:PORT, not '%s'\n", url.c_str());
    return kUsage;
  }
  options.user = user;
  options.secret = secret;
  options.reconnect = false;
  options.request_timeout = std::chrono::milliseconds(timeout_ms);
  auto connected = client::Client::Connect(options);
  if (!connected.ok()) {
    std::fprintf(stderr, "skiff call: %s: %s\n", url.c_str(),
                 connected.status().ToString().c_str());
    return connected.status().code() == StatusCode::kUnavailable ? kUnreachable : kRefused;
  }
  client::Reply reply = (*connected)->CallSync(request);
  if (!reply.ok()) {
    std::fprintf(stderr, "skiff call: %s\n", reply.status().ToString().c_str());
    return reply.status().code() == StatusCode::kUnavailable ? kUnreachable : kRefused;
  }
  reply->erase("id");
  std::printf("%s\n", doc::Dump(*reply).c_str());
  return kOk;
}

}  // namespace skiff::cmd
