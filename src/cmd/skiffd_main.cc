// skiffd: the Skiff server process. Settings come from a TOML file, SKIFF_*
// variables and flags (settings.h); SIGTERM and SIGINT stop it gracefully.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/logger.h"
#include "cmd/command_line.h"
#include "cmd/settings.h"
#include "server/server.h"
#include "server/tls_context.h"
#include "store/store.h"

namespace {

// A bad flag, variable or config file is a usage error (64, as in every
// Skiff program); anything else is a failure to run (1).
int Fail(const skiff::Status& status) {
  std::fprintf(stderr, "skiffd: %s\n", status.ToString().c_str());
  if (status.code() != skiff::StatusCode::kBadRequest) return 1;
  std::fputs("Try skiffd --help.\n", stderr);
  return skiff::cmd::kUsageExit;
}

// Each connection costs a descriptor; let the process use all it may.
void RaiseDescriptorLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
}

}  // namespace

int main(int argc, char** argv) {
  skiff::cmd::SkiffdOptions options;
  auto invocation =
      skiff::cmd::ParseSkiffdCommandLine(std::vector<std::string>(argv + 1, argv + argc), options);
  if (!invocation.ok()) return Fail(invocation.status());
  if (invocation->help) {
    std::fputs(invocation->help_text.c_str(), stdout);
    return 0;
  }
  // Key files are read once, here: a bad one stops skiffd before it serves.
  if (options.token.enabled()) {
    auto verifier = skiff::server::auth::LoadTokenVerifier(options.token);
    if (!verifier.ok()) return Fail(verifier.status());
    options.token_verifier = *std::move(verifier);
  }
  if (!options.tls.cert_file.empty() || !options.tls.key_file.empty()) {
    auto tls = skiff::server::TlsContext::Load(options.tls);
    if (!tls.ok()) return Fail(tls.status());
    options.tls_context = std::move(tls).value();
  }
  RaiseDescriptorLimit();
  // A peer that resets its connection must cost that connection only; every
  // send already asks for no signal, and this covers any that does not.
  signal(SIGPIPE, SIG_IGN);

  // Block the signals before any thread starts, so every thread inherits
  // the mask and only sigwait below sees them: SIGTERM and SIGINT stop,
  // SIGHUP re-reads the TLS certificate and key.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  // One skiffd per database (the instance lock); a PostgreSQL that is not
  // up yet is waited for, saying so.
  skiff::store::OpenOptions open;
  open.exclusive = true;
  // Cluster instances share the database (docs/cluster.md): the lock is
  // taken shared, and a server not in cluster mode is refused beside them.
  open.cluster = options.cluster;
  open.wait_for_server = options.store_wait;
  // The store's own lines (a lost PostgreSQL, its reconnect) as skiffd's.
  skiff::StderrLogger logger("skiffd");
  open.logger = &logger;
  open.on_wait = [](const skiff::Status& reason, std::chrono::milliseconds left) {
    std::fprintf(stderr, "skiffd: waiting for the store (%.1f s left): %s\n",
                 static_cast<double>(left.count()) / 1000.0, reason.message().c_str());
  };
  auto store = skiff::store::OpenStore(options.store_url, open);
  if (!store.ok()) return Fail(store.status());
  skiff::SystemClock clock;
  options.logger = &logger;
  auto server = skiff::server::Server::Start(options, **store, clock);
  if (!server.ok()) return Fail(server.status());
  // One line on stdout that scripts (and --port 0 users) can parse.
  std::printf("skiffd listening on %s:%u store=%s durability=%s scheme=%s\n",
              options.address.c_str(), static_cast<unsigned>((*server)->port()),
              std::string((*store)->kind()).c_str(),
              std::string(skiff::server::DurabilityName(options.durability)).c_str(),
              options.tls_context != nullptr ? "wss" : "ws");
  std::fflush(stdout);

  int signal_number = 0;
  while (sigwait(&signals, &signal_number) == 0 && signal_number == SIGHUP) {
    // Logged by the server either way; a bad pair keeps the old one.
    if (options.tls_context == nullptr) {
      std::fprintf(stderr, "skiffd: SIGHUP ignored: no TLS certificate to reload\n");
    } else {
      (void)(*server)->ReloadTls();
    }
  }
  std::fprintf(stderr, "skiffd: stopping (signal %d)\n", signal_number);
  skiff::Status stopped = (*server)->Stop();
  if (!stopped.ok()) return Fail(stopped);
  return 0;
}
