#include "cmd/settings.h"

#include <charconv>
#include <functional>
#include <limits>

namespace skiff::cmd {
namespace {

using server::ServerOptions;

struct Setting {
  const char* flag;   // without the leading "--"
  const char* env;    // SKIFF_...
  const char* value;  // placeholder in --help
  const char* help;
  std::function<std::string(const SkiffdOptions&)> show;
  std::function<Status(SkiffdOptions&, std::string_view)> apply;
};

// 'text' for messages. Built by appending: g++ 12 at -O2 warns falsely
// (-Wrestrict) on "'" + std::string(text).
std::string Quoted(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  out += '\'';
  out += text;
  out += '\'';
  return out;
}

template <typename T>
Status ParseNumber(std::string_view text, T min, T max, T* out) {
  T v{};
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < min || v > max) {
    return BadRequest(Quoted(text) + " is not a number from " + std::to_string(min) + " to " +
                      std::to_string(max));
  }
  *out = v;
  return Status::Ok();
}

template <typename Duration>
std::function<Status(ServerOptions&, std::string_view)> DurationSetter(
    std::chrono::milliseconds ServerOptions::*field) {
  return [field](ServerOptions& o, std::string_view text) {
    int64_t n = 0;
    SKIFF_RETURN_IF_ERROR(ParseNumber<int64_t>(text, 0, int64_t{1} << 40, &n));
    o.*field = std::chrono::duration_cast<std::chrono::milliseconds>(Duration(n));
    return Status::Ok();
  };
}

template <typename Duration>
std::function<std::string(const ServerOptions&)> DurationShow(
    std::chrono::milliseconds ServerOptions::*field) {
  return [field](const ServerOptions& o) {
    return std::to_string(std::chrono::duration_cast<Duration>(o.*field).count());
  };
}

std::function<Status(ServerOptions&, std::string_view)> SizeSetter(size_t ServerOptions::*field,
                                                                   size_t min) {
  return [field, min](ServerOptions& o, std::string_view text) {
    return ParseNumber<size_t>(text, min, std::numeric_limits<uint32_t>::max(), &(o.*field));
  };
}

std::function<std::string(const ServerOptions&)> SizeShow(size_t ServerOptions::*field) {
  return [field](const ServerOptions& o) { return std::to_string(o.*field); };
}

const std::vector<Setting>& Settings() {
  using std::chrono::milliseconds;
  using std::chrono::seconds;
  static const std::vector<Setting> settings = {
      {"store", "SKIFF_STORE", "URL",
       "Where documents live: memory:, sqlite:PATH or postgres://...",
       [](const ServerOptions& o) { return o.store_url; },
       [](ServerOptions& o, std::string_view v) {
         o.store_url = std::string(v);
         return Status::Ok();
       }},
      {"address", "SKIFF_ADDRESS", "IP", "Address to listen on (0.0.0.0 for every interface)",
       [](const ServerOptions& o) { return o.address; },
       [](ServerOptions& o, std::string_view v) {
         o.address = std::string(v);
         return Status::Ok();
       }},
      {"port", "SKIFF_PORT", "N", "TCP port; 0 picks a free one and prints it",
       [](const ServerOptions& o) { return std::to_string(o.port); },
       [](ServerOptions& o, std::string_view v) {
         return ParseNumber<uint16_t>(v, 0, 65535, &o.port);
       }},
      {"durability", "SKIFF_DURABILITY", "MODE",
       "commit: acknowledge writes after their transaction committed (group commit); "
       "memory: acknowledge once applied, write to the store within --flush-interval-ms",
       [](const ServerOptions& o) { return std::string(server::DurabilityName(o.durability)); },
       [](ServerOptions& o, std::string_view v) {
         auto d = server::DurabilityFromName(v);
         if (!d) return BadRequest(Quoted(v) + " is not commit or memory");
         o.durability = *d;
         return Status::Ok();
       }},
      {"io-threads", "SKIFF_IO_THREADS", "N",
       "Threads serving connections, an event loop each; 0 = one on two cores, else one per "
       "two cores",
       SizeShow(&ServerOptions::io_threads), SizeSetter(&ServerOptions::io_threads, 0)},
      {"flush-interval-ms", "SKIFF_FLUSH_INTERVAL_MS", "MS",
       "Memory durability: longest time a write stays only in memory",
       DurationShow<milliseconds>(&ServerOptions::flush_interval),
       DurationSetter<milliseconds>(&ServerOptions::flush_interval)},
      {"max-frame-bytes", "SKIFF_MAX_FRAME_BYTES", "N",
       "Largest request frame; a larger one gets too_large and the connection is closed",
       SizeShow(&ServerOptions::max_frame_bytes), SizeSetter(&ServerOptions::max_frame_bytes, 64)},
      {"max-in-flight", "SKIFF_MAX_IN_FLIGHT", "N",
       "Requests one connection may have waiting for their commit; at the limit the "
       "connection is not read until replies go out",
       SizeShow(&ServerOptions::max_in_flight), SizeSetter(&ServerOptions::max_in_flight, 1)},
      {"max-output-bytes", "SKIFF_MAX_OUTPUT_BYTES", "N",
       "Replies waiting to be sent on one connection; above it the connection is not read "
       "until they drain",
       SizeShow(&ServerOptions::max_output_bytes),
       SizeSetter(&ServerOptions::max_output_bytes, 4096)},
      {"max-buffered-bytes", "SKIFF_MAX_BUFFERED_BYTES", "N",
       "Buffered input and output of all connections together; above it connections "
       "holding buffers are not read until they drain",
       SizeShow(&ServerOptions::max_buffered_bytes),
       SizeSetter(&ServerOptions::max_buffered_bytes, 1 << 20)},
      {"max-connections", "SKIFF_MAX_CONNECTIONS", "N",
       "Connections open at once; more get HTTP 503 (0 = what the descriptor limit allows)",
       SizeShow(&ServerOptions::max_connections), SizeSetter(&ServerOptions::max_connections, 0)},
      {"max-connections-per-address", "SKIFF_MAX_CONNECTIONS_PER_ADDRESS", "N",
       "Connections open at once from one client address (0 = no limit of its own)",
       SizeShow(&ServerOptions::max_connections_per_address),
       SizeSetter(&ServerOptions::max_connections_per_address, 0)},
      {"handshake-timeout-ms", "SKIFF_HANDSHAKE_TIMEOUT_MS", "MS",
       "An opening handshake must complete within this time",
       DurationShow<milliseconds>(&ServerOptions::handshake_timeout),
       DurationSetter<milliseconds>(&ServerOptions::handshake_timeout)},
      {"frame-timeout-s", "SKIFF_FRAME_TIMEOUT_S", "S",
       "A frame must complete this long after its first byte arrived",
       DurationShow<seconds>(&ServerOptions::frame_timeout),
       DurationSetter<seconds>(&ServerOptions::frame_timeout)},
      {"send-timeout-s", "SKIFF_SEND_TIMEOUT_S", "S",
       "Close a connection whose replies make no progress for this long (its client does "
       "not read)",
       DurationShow<seconds>(&ServerOptions::send_timeout),
       DurationSetter<seconds>(&ServerOptions::send_timeout)},
      {"max-unflushed-bytes", "SKIFF_MAX_UNFLUSHED_BYTES", "N",
       "Memory durability: acknowledged bytes not yet in the store before new writes get "
       "unavailable",
       SizeShow(&ServerOptions::max_unflushed_bytes),
       SizeSetter(&ServerOptions::max_unflushed_bytes, 4096)},
      {"max-unflushed-age-ms", "SKIFF_MAX_UNFLUSHED_AGE_MS", "MS",
       "Memory durability: oldest acknowledged write not yet in the store before new writes "
       "get unavailable",
       DurationShow<milliseconds>(&ServerOptions::max_unflushed_age),
       DurationSetter<milliseconds>(&ServerOptions::max_unflushed_age)},
      {"stop-grace-s", "SKIFF_STOP_GRACE_S", "S",
       "At a graceful stop, how long a failing store is retried before unwritten writes are "
       "given up (and named)",
       DurationShow<seconds>(&ServerOptions::stop_grace),
       DurationSetter<seconds>(&ServerOptions::stop_grace)},
      {"max-depth", "SKIFF_MAX_DEPTH", "N", "Deepest nesting of a request's JSON",
       SizeShow(&ServerOptions::max_depth), SizeSetter(&ServerOptions::max_depth, 2)},
      {"idle-timeout-s", "SKIFF_IDLE_TIMEOUT_S", "S",
       "Close a connection silent for this long (0 = never)",
       DurationShow<seconds>(&ServerOptions::idle_timeout),
       DurationSetter<seconds>(&ServerOptions::idle_timeout)},
      {"pack-after-s", "SKIFF_PACK_AFTER_S", "S",
       "Memory tiers: idle time before a document is packed (0 = never)",
       DurationShow<seconds>(&ServerOptions::pack_after),
       DurationSetter<seconds>(&ServerOptions::pack_after)},
      {"store-wait-s", "SKIFF_STORE_WAIT_S", "S",
       "PostgreSQL store: at start, keep trying this long to reach a server that does not "
       "answer yet, saying so on stderr (0 = exit at once)",
       [](const SkiffdOptions& o) {
         return std::to_string(std::chrono::duration_cast<seconds>(o.store_wait).count());
       },
       [](SkiffdOptions& o, std::string_view v) {
         int64_t n = 0;
         SKIFF_RETURN_IF_ERROR(ParseNumber<int64_t>(v, 0, 86400, &n));
         o.store_wait = seconds(n);
         return Status::Ok();
       }},
      {"cluster", "SKIFF_CLUSTER", "BOOL",
       "Cluster mode: several skiffd on one PostgreSQL database, each serving the partitions "
       "it holds a lease on and forwarding the rest to their owners (docs/cluster.md)",
       [](const ServerOptions& o) { return std::string(o.cluster ? "true" : "false"); },
       [](ServerOptions& o, std::string_view v) {
         if (v != "true" && v != "false") return BadRequest(Quoted(v) + " is not true or false");
         o.cluster = v == "true";
         return Status::Ok();
       }},
      {"cluster-address", "SKIFF_CLUSTER_ADDRESS", "HOST:PORT",
       "Cluster mode: where the other instances reach this one (empty = --address:--port)",
       [](const ServerOptions& o) { return o.cluster_address; },
       [](ServerOptions& o, std::string_view v) {
         if (!v.empty() && v.find(':') == std::string_view::npos) {
           return BadRequest(Quoted(v) + " is not HOST:PORT");
         }
         o.cluster_address = std::string(v);
         return Status::Ok();
       }},
      {"cluster-secret", "SKIFF_CLUSTER_SECRET", "TEXT",
       "Cluster mode: what the instances log in to each other with, the same on each (at "
       "least 16 characters; prefer the variable or the file to the flag, which ps shows)",
       [](const ServerOptions& o) { return std::string(o.cluster_secret.empty() ? "" : "(set)"); },
       [](ServerOptions& o, std::string_view v) {
         o.cluster_secret = std::string(v);
         return Status::Ok();
       }},
      {"cluster-lease-ms", "SKIFF_CLUSTER_LEASE_MS", "MS",
       "Cluster mode: how long a partition's lease runs without renewal; a frozen owner's "
       "partitions are taken over after it",
       DurationShow<milliseconds>(&ServerOptions::cluster_lease),
       DurationSetter<milliseconds>(&ServerOptions::cluster_lease)},
      {"evict-after-s", "SKIFF_EVICT_AFTER_S", "S",
       "Memory tiers: idle time before a document is evicted from memory (0 = never)",
       DurationShow<seconds>(&ServerOptions::evict_after),
       DurationSetter<seconds>(&ServerOptions::evict_after)},
  };
  return settings;
}

Status Apply(const Setting& s, std::string_view value, SkiffdOptions& options,
             const std::string& origin) {
  Status st = s.apply(options, value);
  if (!st.ok()) return BadRequest(origin + ": " + st.message());
  return Status::Ok();
}

}  // namespace

Status ApplyEnvironment(const std::vector<std::string>& environment, SkiffdOptions& options) {
  for (const Setting& s : Settings()) {
    std::string prefix = std::string(s.env) + "=";
    for (const std::string& entry : environment) {
      if (entry.compare(0, prefix.size(), prefix) != 0) continue;
      SKIFF_RETURN_IF_ERROR(
          Apply(s, std::string_view(entry).substr(prefix.size()), options, std::string(s.env)));
    }
  }
  return Status::Ok();
}

Status ApplySetting(std::string_view name, std::string_view value, const std::string& origin,
                    SkiffdOptions& options) {
  for (const Setting& s : Settings()) {
    if (name == s.flag) return Apply(s, value, options, origin);
  }
  return BadRequest(origin + ": unknown setting '" + std::string(name) + "'");
}

Result<Invocation> ApplyFlags(const std::vector<std::string>& args, SkiffdOptions& options) {
  Invocation inv;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string_view arg = args[i];
    if (arg == "--help" || arg == "-h") {
      inv.help = true;
      continue;
    }
    if (arg.substr(0, 2) != "--") return BadRequest("unexpected argument '" + args[i] + "'");
    arg.remove_prefix(2);
    std::string_view name = arg.substr(0, arg.find('='));
    if (name == "config") {
      if (name.size() < arg.size()) {
        inv.config_path = std::string(arg.substr(name.size() + 1));
      } else if (i + 1 < args.size()) {
        inv.config_path = args[++i];
      } else {
        return BadRequest("flag '--config' needs a value");
      }
      continue;
    }
    const Setting* setting = nullptr;
    for (const Setting& s : Settings()) {
      if (name == s.flag) setting = &s;
    }
    if (setting == nullptr) return BadRequest("unknown flag '--" + std::string(name) + "'");
    std::string value;
    if (name.size() < arg.size()) {
      value = std::string(arg.substr(name.size() + 1));
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      return BadRequest("flag '--" + std::string(name) + "' needs a value");
    }
    SKIFF_RETURN_IF_ERROR(Apply(*setting, value, options, "--" + std::string(name)));
  }
  return inv;
}

std::string HelpText(std::string_view program) {
  SkiffdOptions defaults;
  std::string out = "Usage: " + std::string(program) + " [--flag value]...\n\n" +
                    "Serves the Skiff v1 protocol (JSON over WebSocket). Every flag can also be\n"
                    "set by the environment variable shown or in the --config file; a flag wins\n"
                    "over the variable, which wins over the file.\n"
                    "SIGTERM or SIGINT stops the server gracefully: writes already applied are\n"
                    "committed and connections are closed with 'going away'.\n\n";
  for (const Setting& s : Settings()) {
    out += "  --" + std::string(s.flag) + " " + s.value + "  (" + s.env + ", default " +
           s.show(defaults) + ")\n      " + s.help + "\n";
  }
  out +=
      "  --config FILE  (SKIFF_CONFIG)\n"
      "      TOML file of settings named like the flags, e.g.\n"
      "        store = \"sqlite:/var/lib/skiff/skiff.db\"\n"
      "        port = 7420\n"
      "        durability = \"memory\"\n"
      "        flush-interval-ms = 50\n"
      "      The environment and flags override it.\n"
      "  --help\n      Print this text.\n";
  return out;
}

}  // namespace skiff::cmd
