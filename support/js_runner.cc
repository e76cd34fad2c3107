#include "support/js_runner.h"

#include <cstdlib>
#include <fstream>
#include <thread>

#include <unistd.h>

#include "support/e2e_options.h"
#include "support/process.h"

namespace skiff::bench {
namespace {

std::string FromEnv(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}

// What to call the driver in a message: its script, never its last
// argument (the configuration, which holds a secret).
std::string DriverName(const std::vector<std::string>& argv) {
  for (const std::string& a : argv) {
    if (a.size() > 4 && (a.ends_with(".mjs") || a.ends_with(".js"))) return a;
  }
  return argv.empty() ? std::string("driver") : argv[0];
}

// True once `pid` has exited (a zombie waiting to be reaped) or is gone.
bool Exited(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(stat, text)) return true;
  const size_t paren = text.rfind(')');
  return paren == std::string::npos || paren + 2 >= text.size() || text[paren + 2] == 'Z';
}

bool IsObjectLine(const std::string& line, nlohmann::json* out) {
  if (line.empty() || line.front() != '{') return false;
  nlohmann::json parsed = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object()) return false;
  *out = std::move(parsed);
  return true;
}

}  // namespace

Result<nlohmann::json> RunJsDriver(const std::vector<std::string>& argv,
                                   const std::vector<std::string>& env,
                                   std::chrono::milliseconds timeout,
                                   const std::function<void(const std::string&)>& on_line) {
  const std::string name = DriverName(argv);
  support::Process child;
  SKIFF_RETURN_IF_ERROR(child.Start(argv, env));
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  nlohmann::json result;
  bool have = false;
  std::string last_line;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      child.Kill();
      return Unavailable(name + " gave no result within " + std::to_string(timeout.count() / 1000) +
                         " s; killed");
    }
    Result<std::string> line = child.ReadLine(left);
    if (!line.ok()) break;  // output closed (it exited), or the deadline: checked above
    if (IsObjectLine(*line, &result)) {
      have = true;
    } else if (on_line) {
      on_line(*line);
    }
    last_line = *line;
  }
  if (std::chrono::steady_clock::now() >= deadline) {
    child.Kill();
    return Unavailable(name + " gave no result within " + std::to_string(timeout.count() / 1000) +
                       " s; killed");
  }
  // The output is closed: the child is exiting (Bun takes a second or so).
  // Its own exit status says how it ended, so it gets time to give one
  // before a SIGTERM would make it a signal.
  const auto exit_by = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!Exited(child.pid()) && std::chrono::steady_clock::now() < exit_by) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  Result<int> status = child.Stop(std::chrono::seconds(5));
  const std::string why = have && result.contains("error") && result["error"].is_string()
                              ? result["error"].get<std::string>()
                              : last_line;
  if (!status.ok()) return Unavailable(name + " ended abnormally: " + why);
  if (*status != 0) {
    return Unavailable(name + " exited with status " + std::to_string(*status) + ": " + why);
  }
  if (!have) return Unavailable(name + " printed no JSON result (last line: " + why + ")");
  if (result.contains("error")) return Unavailable(why);
  return result;
}

std::string NodePath() { return FromEnv("SKIFF_BENCH_NODE", "/usr/bin/node"); }

std::string BunPath() {
  if (!GetE2eOptions().bun.empty()) return GetE2eOptions().bun;
  return SourcePath("bench/peers/node_modules/.bin/bun");
}

std::string ChromiumPath() { return FromEnv("SKIFF_BENCH_CHROMIUM", "/usr/bin/chromium"); }

std::string SourcePath(const std::string& relative) {
  return std::string(SKIFF_SOURCE_DIR) + "/" + relative;
}

std::string JsMissing(const std::string& runtime, const std::string& dist_entry) {
  const std::string node = NodePath();
  if (runtime != "bun" && access(node.c_str(), X_OK) != 0) return "node not found at " + node;
  if (runtime == "bun" && access(BunPath().c_str(), X_OK) != 0) {
    return "Bun not found at " + BunPath() + " (npm ci --prefix bench/peers installs it)";
  }
  if (runtime == "chromium") {
    if (access(ChromiumPath().c_str(), X_OK) != 0) {
      return "Chromium not found at " + ChromiumPath();
    }
    const std::string puppeteer = SourcePath("src/js/node_modules/puppeteer-core/package.json");
    if (access(puppeteer.c_str(), R_OK) != 0) {
      return "puppeteer-core is not in src/js/node_modules (npm ci --prefix src/js)";
    }
  }
  const std::string dist = SourcePath("src/js/dist/" + dist_entry);
  if (access(dist.c_str(), R_OK) != 0) {
    return dist + " is not built (cd src/js && npx tsc -p tsconfig.json)";
  }
  return "";
}

}  // namespace skiff::bench
