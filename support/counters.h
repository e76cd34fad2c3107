// The suite's one way to set a benchmark counter, declaring its kind.
//
// Deterministic counters (statements per write, bytes per push) must be
// identical on every run and machine; the comparer fails a run when one
// changes. Info counters (latency percentiles, memory) vary and are only shown.
// Google Benchmark's JSON carries no kinds, so the suite's main writes the
// kinds seen here into the output's context as `skiff_counter_kinds`.
//
// Thread-safe: the kind registry is guarded by a mutex.
#ifndef SKIFF_SUPPORT_COUNTERS_H_
#define SKIFF_SUPPORT_COUNTERS_H_

#include <map>
#include <string>

#include <benchmark/benchmark.h>

namespace skiff::bench {

enum class CounterKind { kDeterministic, kInfo };

// Sets counter `name` ([a-z0-9_]+, unit in the name) on `state`. A name keeps
// one kind for the whole process; declaring it with another aborts.
void SetDeterministic(benchmark::State& state, const std::string& name, double value);
void SetInfo(benchmark::State& state, const std::string& name, double value);

// Every counter name declared so far, with its kind.
std::map<std::string, CounterKind> CounterKinds();

const char* CounterKindName(CounterKind kind);

}  // namespace skiff::bench

#endif  // SKIFF_SUPPORT_COUNTERS_H_
