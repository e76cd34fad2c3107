#include "support/postgres.h"

#include <cstdlib>
#include <mutex>

#include <pqxx/pqxx>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "support/run_facts.h"

namespace skiff::support {
namespace {

void ReleaseLease() {
  const std::string command =
      std::string(SKIFF_SOURCE_DIR) + "/tools/pg-down --release " + std::to_string(getpid());
  if (std::system(command.c_str()) != 0) {
    fprintf(stderr, "skiff: *** could not release PostgreSQL; stop it with tools/pg-down ***\n");
  }
}

Result<PostgresTarget> Lookup() {
  if (const char* url = std::getenv("SKIFF_TEST_POSTGRES_URL"); url != nullptr && *url != '\0') {
    return PostgresTarget{url, "SKIFF_TEST_POSTGRES_URL"};
  }
  // pg-up prints progress on stderr (left to reach the user) and the URL as
  // the last line of stdout. The lease makes a cluster started for this
  // process stop again when it exits (ReleaseLease), unless another live
  // process still holds one.
  const std::string command =
      std::string(SKIFF_SOURCE_DIR) + "/tools/pg-up --lease " + std::to_string(getpid());
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
  std::atexit(ReleaseLease);
  return PostgresTarget{url, "tools/pg-up"};
}

// "15.18", or "unknown (...)" when the server cannot be asked.
std::string ServerVersion(const std::string& url) {
  try {
    pqxx::connection conn(url);
    pqxx::nontransaction tx(conn);
    return tx.exec1("SHOW server_version")[0].as<std::string>();
  } catch (const std::exception& e) {
    return std::string("unknown (") + e.what() + ")";
  }
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
      // The results say which server they were measured on.
      RecordFact("skiff_postgres_version", ServerVersion((*result)->url));
    } else {
      fprintf(stderr, "skiff: *** NO POSTGRESQL: %s ***\n", result->status().ToString().c_str());
    }
  });
  return *result;
}

bool MaySkipMissingStore(const std::string& kind, const Status& why) {
  const char* named = std::getenv("SKIFF_TEST_POSTGRES_URL");
  return kind == "postgres" && why.code() == StatusCode::kUnavailable && !InCi() &&
         (named == nullptr || *named == '\0');
}

bool InCi() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && (std::string(ci) == "true" || std::string(ci) == "1");
}

}  // namespace skiff::support
