// The suite's one way to set a benchmark counter, declaring its kind.
//
// Three kinds (docs/benchmarks.md, "Counters"):
// - Deterministic counters (statements per write, bytes per push) are real
//   counts of what the code did; they must be identical on every run and
//   machine, and the comparer fails a run when one changes.
// - Judged counters are resource figures a change can make worse (the
//   server's CPU per operation, its resident memory, heap bytes): they vary
//   a little from run to run, so the comparer judges them like times, over
//   repetitions with the Mann-Whitney test and the noise rule, in the
//   direction they declare (lower is better for every one so far).
// - Info counters (latency percentiles, rates already judged as the case's
//   time) vary and are only shown.
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

enum class CounterKind { kDeterministic, kInfo, kJudgedLower, kJudgedHigher };

// Which way a judged counter improves.
enum class Better { kLower, kHigher };

// Sets counter `name` ([a-z0-9_]+, unit in the name) on `state`. A name keeps
// one kind for the whole process; declaring it with another aborts.
void SetDeterministic(benchmark::State& state, const std::string& name, double value);
void SetInfo(benchmark::State& state, const std::string& name, double value);
void SetJudged(benchmark::State& state, const std::string& name, double value,
               Better better = Better::kLower);

// Every counter name declared so far, with its kind.
std::map<std::string, CounterKind> CounterKinds();

// The kind as the JSON context writes it: "deterministic", "info",
// "judged_lower" or "judged_higher" (what skiff-compare reads).
const char* CounterKindName(CounterKind kind);

}  // namespace skiff::bench

#endif  // SKIFF_SUPPORT_COUNTERS_H_
