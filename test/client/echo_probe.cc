// Measures how many round trips per second the SDK sustains against an
// in-process server, with C connections x D in flight.
// Usage: client_echo_probe [connections=16] [in_flight=32] [seconds=3]
//                          [io_threads=1] [op=echo|set] [store=memory:]
// `set` writes distinct keys in commit durability, so it shows group commit.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>

#include "base/clock.h"
#include "client/client.h"
#include "server/server.h"
#include "server/users.h"
#include "store/store.h"

int main(int argc, char** argv) {
  size_t connections = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 16;
  size_t in_flight = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 32;
  double seconds = argc > 3 ? std::strtod(argv[3], nullptr) : 3.0;
  size_t io_threads = argc > 4 ? std::strtoul(argv[4], nullptr, 10) : 1;

  std::string op = argc > 5 ? argv[5] : "echo";
  std::string url = argc > 6 ? argv[6] : "memory:";
  auto opened = skiff::store::OpenStore(url);
  if (!opened.ok()) {
    std::fprintf(stderr, "store: %s\n", opened.status().ToString().c_str());
    return 1;
  }
  auto& store = *opened;
  auto secret =
      skiff::server::CreateUser(*store, "probe", skiff::server::Permissions({"*"}, {"*"}));
  if (!secret.ok()) {
    std::fprintf(stderr, "user: %s\n", secret.status().ToString().c_str());
    return 1;
  }
  skiff::SystemClock clock;
  skiff::server::ServerOptions so;
  so.port = 0;
  so.io_threads = io_threads;
  auto server = skiff::server::Server::Start(so, *store, clock);
  if (!server.ok()) {
    std::fprintf(stderr, "server: %s\n", server.status().ToString().c_str());
    return 1;
  }
  skiff::client::ClientOptions co;
  co.port = (*server)->port();
  co.connections = connections;
  co.max_in_flight = in_flight;
  co.user = "probe";
  co.secret = *secret;
  auto client = skiff::client::Client::Connect(co);
  if (!client.ok()) {
    std::fprintf(stderr, "client: %s\n", client.status().ToString().c_str());
    return 1;
  }

  std::atomic<bool> running{true};
  std::atomic<uint64_t> done{0};
  std::atomic<uint64_t> errors{0};
  std::atomic<int64_t> outstanding{0};
  std::atomic<uint64_t> next_key{0};
  auto request = [&] {
    if (op == "set") {
      std::string key = "k";
      key += std::to_string(next_key++);
      return skiff::doc::Value{{"op", "set"},
                               {"table", "probe"},
                               {"key", key},
                               {"value", {{"n", 1}, {"s", "0123456789abcdef"}}}};
    }
    return skiff::doc::Value{{"op", "echo"}, {"data", "0123456789abcdef"}};
  };
  // Closed loop: each reply sends the next request, keeping C x D in flight.
  std::function<void(skiff::client::Reply)> on_reply;
  on_reply = [&](skiff::client::Reply reply) {
    if (!reply.ok()) ++errors;
    ++done;
    if (running.load(std::memory_order_relaxed)) {
      (*client)->Call(request(), on_reply);
    } else {
      --outstanding;
    }
  };
  auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < connections * in_flight; ++i) {
    ++outstanding;
    (*client)->Call(request(), on_reply);
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  running = false;
  uint64_t total = done.load();
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (int i = 0; i < 500 && outstanding.load() > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::printf(
      "%s on %s: %zu connections x %zu in flight, %zu server io threads: %.0f msg/s (%llu "
      "errors)\n",
      op.c_str(), url.c_str(), connections, in_flight, io_threads, total / elapsed,
      static_cast<unsigned long long>(errors.load()));
  (*client)->Shutdown();
  (void)(*server)->Stop();
  return errors.load() == 0 ? 0 : 1;
}
