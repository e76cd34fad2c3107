#include "support/postgres.h"

#include <cstdlib>
#include <mutex>

#include <stdio.h>
#include <sys/wait.h>

namespace skiff::support {
namespace {

Result<PostgresTarget> Lookup() {
  if (const char* url = std::getenv("SKIFF_TEST_POSTGRES_URL"); url != nullptr && *url != '\0') {
    return PostgresTarget{url, "SKIFF_TEST_POSTGRES_URL"};
  }
  // pg-up prints progress on stderr (left to reach the user) and the URL as
  // the last line of stdout.
  const std::string command = std::string(SKIFF_SOURCE_DIR) + "/tools/pg-up";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return Unavailable("cannot run " + command);
  std::string out;
  char buffer[512];
  while (fgets(buffer, sizeof buffer, pipe) != nullptr) out += buffer;
  const int status = pclose(pipe);
  if (status != 0) {
    return Unavailable(command + " failed (exit " + std::to_string(WEXITSTATUS(status)) +
                       "); see its messages above");
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  const size_t last_line = out.find_last_of('\n');
  std::string url = last_line == std::string::npos ? out : out.substr(last_line + 1);
  if (url.rfind("postgres", 0) != 0) return Unavailable(command + " printed no URL");
  return PostgresTarget{url, "tools/pg-up"};
}

}  // namespace

Result<PostgresTarget> TestPostgres() {
  static std::once_flag once;
  static Result<PostgresTarget>* result = nullptr;
  std::call_once(once, [] {
    result = new Result<PostgresTarget>(Lookup());
    if (result->ok()) {
      fprintf(stderr, "skiff: PostgreSQL for tests: %s (from %s)\n", (*result)->url.c_str(),
              (*result)->source.c_str());
    } else {
      fprintf(stderr, "skiff: *** NO POSTGRESQL: %s ***\n", result->status().ToString().c_str());
    }
  });
  return *result;
}

bool InCi() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && (std::string(ci) == "true" || std::string(ci) == "1");
}

}  // namespace skiff::support
