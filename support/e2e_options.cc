#include "support/e2e_options.h"

#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "support/bench_options.h"
#include "support/flag_hooks.h"

namespace skiff::bench {
namespace {

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

FlagOutcome Apply(E2eOptions& o, const std::string& arg, std::string* error);

// Every flag has an environment variable that sets its default, so a run
// through ctest (where each family gets the same arguments) can be shaped
// without passing flags that the store-level families do not know.
constexpr struct {
  const char* env;
  const char* flag;
} kEnvFlags[] = {
    {"SKIFF_URL", "url"},
    {"SKIFF_USER", "user"},
    {"SKIFF_SECRET", "secret"},
    {"SKIFF_BENCH_BUN", "bun"},
    {"SKIFF_BENCH_CONCURRENCY", "concurrency"},
    {"SKIFF_BENCH_PIPELINE", "pipeline"},
    {"SKIFF_BENCH_TIMEOUT_MS", "timeout"},
    {"SKIFF_BENCH_CAP_MS", "cap"},
    {"SKIFF_BENCH_DURABILITY", "durability"},
    {"SKIFF_BENCH_SERVER", "server"},
};

E2eOptions& Mutable() {
  static E2eOptions* options = [] {
    auto* o = new E2eOptions();  // read until exit
    for (const auto& [env, flag] : kEnvFlags) {
      const std::string value = Env(env);
      if (value.empty()) continue;
      std::string error;
      if (Apply(*o, "--" + std::string(flag) + "=" + value, &error) == FlagOutcome::kBad) {
        std::fprintf(stderr, "%s: %s\n", env, error.c_str());
        std::exit(2);
      }
    }
    std::stringstream list(Env("SKIFF_BENCH_SKIP"));
    for (std::string name; std::getline(list, name, ',');) {
      if (!name.empty()) o->skip.insert(name);
    }
    return o;
  }();
  return *options;
}

bool ParseCount(const std::string& text, uint64_t min, uint64_t max, uint64_t* out) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) return false;
  errno = 0;
  uint64_t v = std::strtoull(text.c_str(), nullptr, 10);
  if (errno != 0 || v < min || v > max) return false;
  *out = v;
  return true;
}

FlagOutcome Apply(E2eOptions& o, const std::string& arg, std::string* error) {
  const size_t eq = arg.find('=');
  if (arg.rfind("--", 0) != 0 || eq == std::string::npos) return FlagOutcome::kNotMine;
  const std::string name = arg.substr(2, eq - 2);
  const std::string value = arg.substr(eq + 1);
  uint64_t n = 0;
  auto number = [&](uint64_t min, uint64_t max) {
    if (ParseCount(value, min, max, &n)) return true;
    *error = "--" + name + " takes a number from " + std::to_string(min) + " to " +
             std::to_string(max) + ", not '" + value + "'";
    return false;
  };
  if (name == "concurrency") {
    if (!number(1, 20000)) return FlagOutcome::kBad;
    o.concurrency = n;
  } else if (name == "pipeline") {
    if (!number(1, 4095)) return FlagOutcome::kBad;
    o.pipeline = n;
  } else if (name == "timeout") {
    if (!number(1, 3'600'000)) return FlagOutcome::kBad;
    o.timeout = std::chrono::milliseconds(n);
  } else if (name == "cap") {
    if (!number(1, 86'400'000)) return FlagOutcome::kBad;
    o.cap = std::chrono::milliseconds(n);
  } else if (name == "durability") {
    if (value != "commit" && value != "memory") {
      *error = "--durability takes commit or memory, not '" + value + "'";
      return FlagOutcome::kBad;
    }
    o.durability = value;
  } else if (name == "server") {
    if (value != "inprocess" && value != "child") {
      *error = "--server takes inprocess or child, not '" + value + "'";
      return FlagOutcome::kBad;
    }
    o.server = value;
  } else if (name == "url") {
    std::string host;
    uint16_t port = 0;
    if (!ParseWsUrl(value, &host, &port)) {
      *error = "--url takes ws://HOST:PORT, not '" + value + "'";
      return FlagOutcome::kBad;
    }
    o.url = value;
  } else if (name == "user") {
    o.user = value;
  } else if (name == "secret") {
    o.secret = value;
  } else if (name == "bun") {
    o.bun = value;
  } else if (name == "test-drop-one-add-in") {
    if (!number(0, 1'000'000'000)) return FlagOutcome::kBad;
    o.drop_one_add_in = static_cast<uint32_t>(n);
  } else {
    return FlagOutcome::kNotMine;
  }
  return FlagOutcome::kTaken;
}

const bool kHooked = AddFlagHook(
    [](const std::string& arg, std::string* error) { return Apply(Mutable(), arg, error); });

}  // namespace

std::chrono::nanoseconds E2eOptions::Cap() const {
  if (cap.count() > 0) return cap;
  return std::chrono::nanoseconds(static_cast<int64_t>(25e9 * Options().BudgetScale()));
}

const E2eOptions& GetE2eOptions() {
  (void)kHooked;
  return Mutable();
}

bool ParseWsUrl(const std::string& url, std::string* host, uint16_t* port) {
  constexpr std::string_view kScheme = "ws://";
  if (url.rfind(kScheme, 0) != 0) return false;
  std::string rest = url.substr(kScheme.size());
  if (size_t slash = rest.find('/'); slash != std::string::npos) rest.resize(slash);
  const size_t colon = rest.rfind(':');
  if (colon == std::string::npos || colon == 0) return false;
  uint64_t p = 0;
  if (!ParseCount(rest.substr(colon + 1), 1, 65535, &p)) return false;
  *host = rest.substr(0, colon);
  *port = static_cast<uint16_t>(p);
  return true;
}

}  // namespace skiff::bench
