// The suite's one way to register a case.
//
// A family hands a function to AddRegistration; the suite's main calls it
// after parsing the options table, so the function can loop over the
// stores chosen with --store. Inside it, AddCase registers each case:
//
//   const bool kRegistered = AddRegistration([] {
//     for (const std::string& kind : SelectedStores()) {
//       AddCase("BM_WriteOne/" + kind, [kind](benchmark::State& s) { WriteOne(s, kind); })
//           ->UseRealTime()
//           ->Unit(benchmark::kMicrosecond);
//     }
//   });
//
// Names: a case that uses a store names it as one segment of its name
// ("BM_WriteOne/sqlite", "get-hot/sequential/sqlite/commit"); the JSON
// context's skiff_stores and the PostgreSQL release job rely on it.
//
// Not thread-safe: used during static initialisation and then by main only.
#ifndef SKIFF_SUPPORT_BENCH_REGISTRY_H_
#define SKIFF_SUPPORT_BENCH_REGISTRY_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "support/test_store.h"

namespace skiff::bench {

// Always returns true, so a bench file can write
//   const bool kRegistered = AddRegistration([] { ... });
bool AddRegistration(std::function<void()> registration);
void RunRegistrations();

// Registers case `name`. A case that --skip names is still registered, so it
// shows in the results, but only reports "skipped: --skip".
benchmark::internal::Benchmark* AddCase(const std::string& name,
                                        std::function<void(benchmark::State&)> body);

// The store kinds selected with --store, in a fixed order.
std::vector<std::string> SelectedStores();

// Ends a case that cannot run because its store is unavailable: a
// "skipped: ..." run when support::MaySkipMissingStore allows it, an error
// otherwise. Either way the reason is printed.
void SkipUnavailable(benchmark::State& state, const std::string& kind, const Status& why);

// A fresh, empty store of `kind` for one case; nullptr after ending the case
// through SkipUnavailable when it cannot be opened.
std::unique_ptr<support::TestStore> OpenTestStore(benchmark::State& state, const std::string& kind);

}  // namespace skiff::bench

#endif  // SKIFF_SUPPORT_BENCH_REGISTRY_H_
