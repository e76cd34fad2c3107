#include "support/bench_registry.h"

#include "support/bench_options.h"
#include "support/postgres.h"
#include "support/suite_options.h"

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

benchmark::internal::Benchmark* AddCase(const std::string& name,
                                        std::function<void(benchmark::State&)> body) {
  if (SkipRequested(name)) {
    return benchmark::RegisterBenchmark(
        name.c_str(), [](benchmark::State& state) { state.SkipWithError("skipped: --skip"); });
  }
  return benchmark::RegisterBenchmark(name.c_str(), std::move(body));
}

std::vector<std::string> SelectedStores() {
  std::vector<std::string> out;
  for (const char* kind : {"memory", "sqlite", "postgres"}) {
    if (Options().WantsStore(kind)) out.push_back(kind);
  }
  return out;
}

void SkipUnavailable(benchmark::State& state, const std::string& kind, const Status& why) {
  if (support::MaySkipMissingStore(kind, why)) {
    state.SkipWithError(("skipped: " + why.ToString()).c_str());
  } else if (kind == "postgres" && why.code() == StatusCode::kUnavailable) {
    state.SkipWithError(
        ("PostgreSQL unavailable under CI or SKIFF_TEST_POSTGRES_URL: " + why.ToString()).c_str());
  } else {
    state.SkipWithError(("cannot open the " + kind + " store: " + why.ToString()).c_str());
  }
}

std::unique_ptr<support::TestStore> OpenTestStore(benchmark::State& state,
                                                  const std::string& kind) {
  auto opened = support::TestStore::Open(kind);
  if (opened.ok()) return std::move(*opened);
  SkipUnavailable(state, kind, opened.status());
  return nullptr;
}

}  // namespace skiff::bench
