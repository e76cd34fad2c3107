#include "cmd/call.h"

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include <pthread.h>

#include "client/client.h"
#include "cmd/command_line.h"
#include "cmd/ws_url.h"
#include "doc/document.h"

namespace skiff::cmd {
namespace {

constexpr int kOk = 0;
constexpr int kRefused = 1;
constexpr int kUnreachable = 6;

// One event as a JSON line: its kind under "event", and what it carries.
std::string EventLine(const client::WatchEvent& e) {
  doc::Value line = {{"event", e.kind}};
  if (!e.key.empty()) line["key"] = e.key;
  if (e.value) line["value"] = *e.value;
  if (e.deleted) line["deleted"] = true;
  if (e.coalesced) line["coalesced"] = true;
  if (e.version != 0) line["version"] = e.version;
  if (!e.reason.empty()) line["reason"] = e.reason;
  if (!e.message.empty()) line["message"] = e.message;
  return doc::Dump(line);
}

// `skiff call watch`: prints events until SIGINT/SIGTERM or `count` of
// them. The signals are blocked before the client starts its threads, so
// only this thread takes them (sigtimedwait), and the printing stays on
// the client's I/O thread.
int RunWatch(const CallRequest& r, const doc::Value& request, client::ClientOptions options) {
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  options.reconnect = true;
  auto connected = client::Client::Connect(options);
  if (!connected.ok()) {
    std::fprintf(stderr, "skiff call: %s: %s\n", r.url.c_str(),
                 connected.status().ToString().c_str());
    return connected.status().code() == StatusCode::kUnavailable ? kUnreachable : kRefused;
  }
  auto text = [&](const char* name) {
    auto it = request.find(name);
    // key=12 parses as a number; it names the key "12" all the same.
    if (it == request.end()) return std::string();
    return it->is_string() ? it->get<std::string>() : doc::Dump(*it);
  };
  client::WatchTarget target;
  target.key = text("key");
  target.prefix = text("prefix");
  auto initial = request.find("initial");
  target.initial = initial != request.end() && initial->is_boolean() && initial->get<bool>();
  std::atomic<size_t> printed{0};
  std::atomic<bool> ended{false};
  Result<uint64_t> watch =
      (*connected)->Watch(text("table"), target, [&](const client::WatchEvent& e) {
        if (r.count != 0 && printed.load() >= r.count) return;
        std::printf("%s\n", EventLine(e).c_str());
        std::fflush(stdout);
        printed.fetch_add(1);
        if (e.kind == "ended" && e.reason != "overflow") ended.store(true);
      });
  if (!watch.ok()) {
    std::fprintf(stderr, "skiff call: %s\n", watch.status().ToString().c_str());
    return watch.status().code() == StatusCode::kUnavailable ? kUnreachable : kRefused;
  }
  const timespec tick{0, 100'000'000};
  while (!ended.load() && (r.count == 0 || printed.load() < r.count)) {
    if (sigtimedwait(&stop, nullptr, &tick) > 0) break;
  }
  (*connected)->Shutdown();
  return kOk;
}

}  // namespace

CLI::App* AddCallCommand(CLI::App& app, CallRequest& r) {
  CLI::App* call = app.add_subcommand(
      "call",
      "Sends one request to a running skiffd and prints the reply. VALUE is JSON when it "
      "parses as JSON, else a string:\n"
      "  skiff call set table=notes key=a value='{\"text\":\"hi\"}'\n"
      "  skiff call get table=notes key=a\n"
      "  skiff call add table=counters key=c path='[\"n\"]' delta=1\n"
      "  skiff call watch table=notes prefix=a/   (prints events until Ctrl-C)\n"
      "Exit 0 when the reply is ok, 1 when the server refused, 6 when it cannot be "
      "reached.");
  call->add_option("--url", r.url, "the server, ws://HOST:PORT or wss://HOST:PORT (TLS)")
      ->envname("SKIFF_URL")
      ->type_name("URL")
      ->capture_default_str();
  call->add_option("--tls-ca", r.tls_ca,
                   "wss://: trust the server's certificate when it chains to these PEM "
                   "roots (default: the system's store); its name must match HOST")
      ->envname("SKIFF_TLS_CA")
      ->type_name("FILE")
      ->check(CLI::Validator(CLI::ExistingFile).description(""));
  call->add_flag("--insecure", r.insecure,
                 "wss://: do not check the server's certificate at all (anyone on the path "
                 "can read and change the traffic; for tests)");
  call->add_option("--user", r.user, "log in as this user")
      ->envname("SKIFF_USER")
      ->type_name("NAME");
  // Its value is never shown: help output lands in logs.
  call->add_option("--secret", r.secret, "the user's secret")
      ->envname("SKIFF_SECRET")
      ->type_name("HEX");
  call->add_option("--timeout", r.timeout_ms, "milliseconds to wait for the reply")
      ->type_name("MS")
      ->transform(WholeNumber())
      ->check(CLI::Range(1, 3'600'000))
      ->capture_default_str();
  call->add_option("--count", r.count, "watch: exit after this many events (0: until SIGINT)")
      ->type_name("N")
      ->capture_default_str();
  call->add_option("op", r.op,
                   "the operation: ping, get, set, has, delete, add, merge, all, "
                   "stats...")
      ->required();
  call->add_option("fields", r.fields, "NAME=VALUE members of the request")
      ->type_name("NAME=VALUE");
  return call;
}

int RunCall(const CallRequest& r) {
  const std::string& url = r.url;
  const std::string& op = r.op;
  doc::Value request = {{"op", op}};
  for (const std::string& field : r.fields) {
    const size_t eq = field.find('=');
    if (eq == std::string::npos || eq == 0) {
      std::fprintf(stderr, "skiff call: '%s' is not NAME=VALUE\n", field.c_str());
      return kUsageExit;
    }
    const std::string text = field.substr(eq + 1);
    Result<doc::Value> parsed = doc::Parse(text);
    request[field.substr(0, eq)] = parsed.ok() ? *parsed : doc::Value(text);
  }
  Result<WsUrl> parsed_url = ParseWsUrl(url);
  if (!parsed_url.ok()) {
    std::fprintf(stderr, "skiff call: --url: %s\n", parsed_url.status().message().c_str());
    return kUsageExit;
  }
  const WsUrl& target = *parsed_url;
  if (!target.tls && (!r.tls_ca.empty() || r.insecure)) {
    std::fprintf(stderr, "skiff call: --tls-ca and --insecure need a wss:// URL\n");
    return kUsageExit;
  }
  client::ClientOptions options;
  options.host = target.host;
  options.port = target.port;
  options.tls = target.tls;
  options.tls_ca_file = r.tls_ca;
  options.tls_insecure = r.insecure;
  options.user = r.user;
  options.secret = r.secret;
  options.reconnect = false;
  options.request_timeout = std::chrono::milliseconds(r.timeout_ms);
  if (op == "watch") return RunWatch(r, request, options);
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
