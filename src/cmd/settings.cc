#include "cmd/settings.h"

#include <cstdint>
#include <limits>
#include <type_traits>

#include "cmd/command_line.h"

namespace skiff::cmd {
namespace {

using server::ServerOptions;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr char kDescription[] =
    "Serves the Skiff v1 protocol (JSON over WebSocket).\n"
    "SIGTERM or SIGINT stops the server gracefully: writes already applied are\n"
    "committed and connections are closed with 'going away'.";

constexpr char kFooter[] =
    "Every setting is also read from the variable shown (Env:) and from the\n"
    "--config file, a TOML file whose keys are the flags' names:\n"
    "  store = \"sqlite:/var/lib/skiff/skiff.db\"\n"
    "  port = 7420\n"
    "  durability = \"memory\"\n"
    "  cluster = true\n"
    "A flag wins over its variable, which wins over the file. A boolean flag\n"
    "alone means true (--cluster); --cluster=false says false.\n"
    "Exit codes: 0 stopped by a signal, 1 a store or server failure, 64 a bad\n"
    "flag, variable or config file.";

// The rows' shapes. Each row: flag, bound field, variable, help; the default
// shown is the field's value when the row is added.

CLI::Option* Text(CLI::App& app, const char* flag, std::string& field, const char* env,
                  const char* value_name, const char* help) {
  return app.add_option(flag, field, help)
      ->envname(env)
      ->type_name(value_name)
      ->capture_default_str();
}

// A count or a size in bytes: a whole number from `min` to 2^32 - 1.
CLI::Option* Count(CLI::App& app, const char* flag, size_t& field, size_t min, const char* env,
                   const char* help) {
  return app.add_option(flag, field, help)
      ->envname(env)
      ->type_name("N")
      ->capture_default_str()
      ->transform(WholeNumber())
      ->check(CLI::Range(min, size_t{std::numeric_limits<uint32_t>::max()}).description(""));
}

// A duration given in Unit (milliseconds or seconds), kept in milliseconds.
template <typename Unit>
CLI::Option* Duration(CLI::App& app, const char* flag, milliseconds& field, const char* env,
                      const char* help, int64_t max = int64_t{1} << 40) {
  return app
      .add_option_function<int64_t>(
          flag,
          [&field](const int64_t& n) { field = std::chrono::duration_cast<milliseconds>(Unit(n)); },
          help)
      ->envname(env)
      ->type_name(std::is_same_v<Unit, milliseconds> ? "MS" : "S")
      ->default_str(std::to_string(std::chrono::duration_cast<Unit>(field).count()))
      ->transform(WholeNumber())
      ->check(CLI::Range(int64_t{0}, max).description(""));
}

// CLI11's validator of a HOST:PORT setting: empty (unset) or with a colon.
std::string CheckHostPort(const std::string& v) {
  if (v.empty() || v.find(':') != std::string::npos) return "";
  return "'" + v + "' is not HOST:PORT";
}

}  // namespace

void AddSkiffdSettings(CLI::App& app, SkiffdOptions& o, std::string& config_path) {
  UseSkiffConventions(app);
  app.description(kDescription);
  app.footer(kFooter);
  app.get_help_ptr()->configurable(false);

  Text(app, "--store", o.store_url, "SKIFF_STORE", "URL",
       "Where documents live: memory:, sqlite:PATH or postgres://...");
  Text(app, "--address", o.address, "SKIFF_ADDRESS", "IP",
       "Address to listen on (0.0.0.0 for every interface)");
  app.add_option("--port", o.port, "TCP port; 0 picks a free one and prints it")
      ->envname("SKIFF_PORT")
      ->type_name("N")
      ->capture_default_str()
      ->transform(WholeNumber())
      ->check(CLI::Range(0, 65535));
  app.add_option_function<std::string>(
         "--durability",
         [&o](const std::string& name) { o.durability = *server::DurabilityFromName(name); },
         "commit: acknowledge writes after their transaction committed (group commit); "
         "memory: acknowledge once applied, write to the store within --flush-interval-ms")
      ->envname("SKIFF_DURABILITY")
      ->type_name("MODE")
      ->default_str(std::string(server::DurabilityName(o.durability)))
      ->check(CLI::IsMember({"commit", "memory"}));
  Count(app, "--io-threads", o.io_threads, 0, "SKIFF_IO_THREADS",
        "Threads serving connections, an event loop each; 0 = one on two cores, else one per "
        "two cores");
  AddBoolFlag(app, "--io-uring", o.io_uring,
              "Send to many connections at once in one io_uring submission when the kernel "
              "allows it (else, and with false, one sendmsg per connection)")
      ->envname("SKIFF_IO_URING")
      ->expected(0, 1);
  Duration<milliseconds>(app, "--flush-interval-ms", o.flush_interval, "SKIFF_FLUSH_INTERVAL_MS",
                         "Memory durability: longest time a write stays only in memory");
  Count(app, "--max-frame-bytes", o.max_frame_bytes, 64, "SKIFF_MAX_FRAME_BYTES",
        "Largest request frame; a larger one gets too_large and the connection is closed");
  Count(app, "--max-in-flight", o.max_in_flight, 1, "SKIFF_MAX_IN_FLIGHT",
        "Requests one connection may have waiting for their commit; at the limit the "
        "connection is not read until replies go out");
  Count(app, "--max-output-bytes", o.max_output_bytes, 4096, "SKIFF_MAX_OUTPUT_BYTES",
        "Replies waiting to be sent on one connection; above it the connection is not read "
        "until they drain");
  Count(app, "--max-buffered-bytes", o.max_buffered_bytes, 1 << 20, "SKIFF_MAX_BUFFERED_BYTES",
        "Buffered input and output of all connections together; above it connections "
        "holding buffers are not read until they drain");
  Count(app, "--max-connections", o.max_connections, 0, "SKIFF_MAX_CONNECTIONS",
        "Connections open at once; more get HTTP 503 (0 = what the descriptor limit allows)");
  Count(app, "--max-connections-per-address", o.max_connections_per_address, 0,
        "SKIFF_MAX_CONNECTIONS_PER_ADDRESS",
        "Connections open at once from one client address (0 = no limit of its own)");
  app.add_option("--user-rate", o.user_rate,
                 "Requests per second of one logged-in user over all its connections; more get "
                 "rate_limited (0 = no limit)")
      ->envname("SKIFF_USER_RATE")
      ->type_name("N")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1e9).description(""));
  Count(app, "--user-burst", o.user_burst, 0, "SKIFF_USER_BURST",
        "Requests one user may send at once above its rate (0 = one second's worth)");
  Count(app, "--max-connections-per-user", o.max_connections_per_user, 0,
        "SKIFF_MAX_CONNECTIONS_PER_USER",
        "Logged-in connections of one user at once; another login gets rate_limited (0 = no "
        "limit)");
  Count(app, "--max-failed-logins", o.max_failed_logins, 0, "SKIFF_MAX_FAILED_LOGINS",
        "Failed logins from one address within the window before its logins are refused "
        "(rate_limited) for a window, doubled with each block in a row (0 = no limit)");
  Duration<milliseconds>(app, "--failed-login-window-ms", o.failed_login_window,
                         "SKIFF_FAILED_LOGIN_WINDOW_MS",
                         "The window of --max-failed-logins, and its first block");
  Duration<milliseconds>(app, "--handshake-timeout-ms", o.handshake_timeout,
                         "SKIFF_HANDSHAKE_TIMEOUT_MS",
                         "An opening handshake must complete within this time");
  Duration<seconds>(app, "--frame-timeout-s", o.frame_timeout, "SKIFF_FRAME_TIMEOUT_S",
                    "A frame must complete this long after its first byte arrived");
  Duration<seconds>(app, "--send-timeout-s", o.send_timeout, "SKIFF_SEND_TIMEOUT_S",
                    "Close a connection whose replies make no progress for this long (its "
                    "client does not read)");
  Count(app, "--max-unflushed-bytes", o.max_unflushed_bytes, 4096, "SKIFF_MAX_UNFLUSHED_BYTES",
        "Memory durability: acknowledged bytes not yet in the store before new writes get "
        "unavailable");
  Duration<milliseconds>(app, "--max-unflushed-age-ms", o.max_unflushed_age,
                         "SKIFF_MAX_UNFLUSHED_AGE_MS",
                         "Memory durability: oldest acknowledged write not yet in the store "
                         "before new writes get unavailable");
  Duration<seconds>(app, "--stop-grace-s", o.stop_grace, "SKIFF_STOP_GRACE_S",
                    "At a graceful stop, how long a failing store is retried before unwritten "
                    "writes are given up (and named)");
  Count(app, "--watch-history", o.watch_history, 0, "SKIFF_WATCH_HISTORY",
        "Watches: changes held for a watch that resumes with since (older ones get resync); "
        "in cluster mode the watch log in PostgreSQL keeps ten times as many (at least 1000)");
  Count(app, "--watch-history-bytes", o.watch_history_bytes, 0, "SKIFF_WATCH_HISTORY_BYTES",
        "Watches: bytes of the changes held for since");
  Count(app, "--max-watches-per-connection", o.max_watches_per_connection, 1,
        "SKIFF_MAX_WATCHES_PER_CONNECTION", "Watches one connection may hold open at once");
  Count(app, "--max-watches", o.max_watches, 1, "SKIFF_MAX_WATCHES",
        "Watches the server holds open at once, over all connections");
  Count(app, "--watch-coalesce-bytes", o.watch_coalesce_bytes, 1024, "SKIFF_WATCH_COALESCE_BYTES",
        "Watches: a connection's unsent events past which a key's changes coalesce to its latest");
  Count(app, "--watch-queue-bytes", o.watch_queue_bytes, 4096, "SKIFF_WATCH_QUEUE_BYTES",
        "Watches: a connection's queued events past which the watch ends with overflow");
  // 256 is the deepest the client SDK and cluster links read
  // (doc/json_skip.h): a deeper request could be taken but not relayed.
  Count(app, "--max-depth", o.max_depth, 2, "SKIFF_MAX_DEPTH",
        "Deepest nesting of a request's JSON (at most 256)")
      ->check(CLI::Range(size_t{2}, size_t{256}).description(""));
  Duration<seconds>(app, "--idle-timeout-s", o.idle_timeout, "SKIFF_IDLE_TIMEOUT_S",
                    "Close a connection silent for this long (0 = never)");
  Duration<seconds>(app, "--pack-after-s", o.pack_after, "SKIFF_PACK_AFTER_S",
                    "Memory tiers: idle time before a document is packed (0 = never)");
  Duration<seconds>(app, "--evict-after-s", o.evict_after, "SKIFF_EVICT_AFTER_S",
                    "Memory tiers: idle time before a document is evicted from memory (0 = "
                    "never)");
  Duration<seconds>(app, "--store-wait-s", o.store_wait, "SKIFF_STORE_WAIT_S",
                    "PostgreSQL store: at start, keep trying this long to reach a server that "
                    "does not answer yet, saying so on stderr (0 = exit at once)",
                    86400);
  // No positional arguments, so the value may also follow as a word:
  // `--cluster true` as well as `--cluster` and `--cluster=true`.
  AddBoolFlag(app, "--cluster", o.cluster,
              "Cluster mode: several skiffd on one PostgreSQL database, each serving the "
              "partitions it holds a lease on and forwarding the rest to their owners "
              "(docs/cluster.md)")
      ->envname("SKIFF_CLUSTER")
      ->expected(0, 1);
  app.add_option("--cluster-address", o.cluster_address,
                 "Cluster mode: where the other instances reach this one (empty = "
                 "--address:--port)")
      ->envname("SKIFF_CLUSTER_ADDRESS")
      ->type_name("HOST:PORT")
      ->check(CheckHostPort, "");
  // Its default is never shown: --help output lands in logs.
  app.add_option("--cluster-secret", o.cluster_secret,
                 "Cluster mode: what the instances log in to each other with, the same on each "
                 "(at least 16 characters; prefer the variable or the file to the flag, which "
                 "ps shows)")
      ->envname("SKIFF_CLUSTER_SECRET")
      ->type_name("TEXT");
  Duration<milliseconds>(app, "--cluster-lease-ms", o.cluster_lease, "SKIFF_CLUSTER_LEASE_MS",
                         "Cluster mode: how long a partition's lease runs without renewal; a "
                         "frozen owner's partitions are taken over after it");
  Text(app, "--cluster-tls-ca", o.cluster_tls_ca_file, "SKIFF_CLUSTER_TLS_CA", "FILE",
       "Cluster mode with TLS: PEM roots the other instances' certificates must chain to "
       "(empty = the system store)");
  app.add_option("--metrics-address", o.metrics_address,
                 "Serve GET /metrics on a plain-HTTP listener of its own at this address "
                 "instead of the main port, which then answers /metrics with 404 (empty = on "
                 "the main port)")
      ->envname("SKIFF_METRICS_ADDRESS")
      ->type_name("HOST:PORT")
      ->check(CheckHostPort, "");
  // Token sign-in (docs/deploy.md, "Token sign-in"): no key file, no token
  // logins. The files are read at start; one that cannot be read or holds
  // no usable key stops skiffd.
  Text(app, "--token-hs256-key", o.token.hs256_key_file, "SKIFF_TOKEN_HS256_KEY", "FILE",
       "Token sign-in: file whose bytes (exactly, at least 32) are the HS256 key");
  Text(app, "--token-public-key", o.token.public_key_file, "SKIFF_TOKEN_PUBLIC_KEY", "FILE",
       "Token sign-in: PEM public key; RSA verifies RS256 tokens, P-256 ES256 tokens");
  Text(app, "--token-jwks", o.token.jwks_file, "SKIFF_TOKEN_JWKS", "FILE",
       "Token sign-in: JWKS file of RSA and P-256 keys, chosen by the token's kid");
  Text(app, "--token-audience", o.token.audience, "SKIFF_TOKEN_AUDIENCE", "TEXT",
       "Token sign-in: the aud a token must carry (empty = not checked)");
  Text(app, "--token-issuer", o.token.issuer, "SKIFF_TOKEN_ISSUER", "TEXT",
       "Token sign-in: the iss a token must carry (empty = not checked)");
  Count(app, "--token-leeway-s", o.token.leeway_s, 0, "SKIFF_TOKEN_LEEWAY_S",
        "Token sign-in: clock skew allowed to exp, nbf and iat, in seconds");
  Text(app, "--token-claim", o.token.claim, "SKIFF_TOKEN_CLAIM", "NAME",
       "Token sign-in: claim holding {\"read\":[...],\"write\":[...],\"groups\":[...]}");
  Count(app, "--token-max-bytes", o.token.max_bytes, 64, "SKIFF_TOKEN_MAX_BYTES",
        "Token sign-in: longer tokens are refused unread");
  // TLS (docs/deploy.md, "TLS"): both files or neither. Read at start (a
  // missing, unreadable, mismatched or expired pair stops skiffd) and again
  // on SIGHUP.
  Text(app, "--tls-cert", o.tls.cert_file, "SKIFF_TLS_CERT", "FILE",
       "TLS: PEM certificate chain (the server's first); the port then serves wss:// and "
       "/healthz over TLS only");
  Text(app, "--tls-key", o.tls.key_file, "SKIFF_TLS_KEY", "FILE",
       "TLS: PEM private key of the certificate");
  AddBoolFlag(app, "--tls-release-buffers", o.tls.release_buffers,
              "TLS: free a connection's record buffers while it has nothing buffered (keeps "
              "idle connections small; false only to measure what it saves)")
      ->envname("SKIFF_TLS_RELEASE_BUFFERS")
      ->expected(0, 1);
  app.add_option("--config", config_path,
                 "TOML file of settings named like the flags (see below); the variables and "
                 "flags override it")
      ->envname("SKIFF_CONFIG")
      ->type_name("FILE")
      ->configurable(false);
}

Result<Invocation> ParseSkiffdCommandLine(const std::vector<std::string>& args,
                                          SkiffdOptions& options) {
  CLI::App app("", "skiffd");
  std::string config_path;
  AddSkiffdSettings(app, options, config_path);
  // Flags and variables first; the file then fills only what neither set,
  // which gives it the lowest precedence. (CLI11's own config reader would
  // rank the file above the variables.)
  SKIFF_ASSIGN_OR_RETURN(Parsed parsed, ParseArgs(app, args));
  Invocation invocation;
  if (parsed.action != Parsed::Action::kRun) {
    invocation.help = true;
    invocation.help_text = parsed.text;
    return invocation;
  }
  if (!config_path.empty()) SKIFF_RETURN_IF_ERROR(ApplyConfigFile(app, config_path));
  return invocation;
}

}  // namespace skiff::cmd
