#include "support/bench_registry.h"

#include <cstdlib>

#include "support/bench_options.h"
#include "support/postgres.h"

namespace skiff::bench {
namespace {

std::vector<std::function<void()>>& Registrations() {
  static auto* list = new std::vector<std::function<void()>>();  // read by main
  return *list;
}

}  // namespace

bool AddRegistration(std::function<void()> registration) {
  Registrations().push_back(std::move(registration));
  return true;
}

void RunRegistrations() {
  for (const auto& registration : Registrations()) registration();
}

std::vector<std::string> SelectedStores() {
  std::vector<std::string> out;
  for (const char* kind : {"memory", "sqlite", "postgres"}) {
    if (Options().WantsStore(kind)) out.push_back(kind);
  }
  return out;
}

void SkipUnavailable(benchmark::State& state, const std::string& reason) {
  // Only a PostgreSQL nobody asked for may be missing quietly; one named in
  // SKIFF_TEST_POSTGRES_URL, or any trouble under CI, is a failure.
  const char* url = std::getenv("SKIFF_TEST_POSTGRES_URL");
  if (support::InCi() || (url != nullptr && *url != '\0')) {
    state.SkipWithError(("unavailable under CI: " + reason).c_str());
  } else {
    state.SkipWithError(("skipped: " + reason).c_str());
  }
}

}  // namespace skiff::bench
