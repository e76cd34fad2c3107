// Deferred benchmark registration. Bench files cannot register their cases at
// static-initialisation time when the cases depend on the command line (which
// stores to run), so they hand a function to AddRegistration and the suite's
// main calls every one after parsing its own flags.
//
// Not thread-safe: used during static initialisation and then by main only.
#ifndef SKIFF_SUPPORT_BENCH_REGISTRY_H_
#define SKIFF_SUPPORT_BENCH_REGISTRY_H_

#include <functional>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

namespace skiff::bench {

// Always returns true, so a bench file can write
//   const bool kRegistered = AddRegistration([] { ... });
bool AddRegistration(std::function<void()> registration);
void RunRegistrations();

// The store kinds selected with --store, in a fixed order.
std::vector<std::string> SelectedStores();

// Ends a case that cannot run because PostgreSQL is unavailable: a failure
// under CI or when SKIFF_TEST_POSTGRES_URL named a server, a "skipped: ..."
// run elsewhere. Either way the reason is printed. Other stores failing to
// open are errors, never skips.
void SkipUnavailable(benchmark::State& state, const std::string& reason);

}  // namespace skiff::bench

#endif  // SKIFF_SUPPORT_BENCH_REGISTRY_H_
