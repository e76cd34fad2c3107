#include "support/counters.h"

#include <mutex>

#include "base/check.h"

namespace skiff::bench {
namespace {

// The kinds outlive every benchmark and are read once by main after the run;
// a process-wide registry is the simplest owner for that.
struct Registry {
  std::mutex mu;
  std::map<std::string, CounterKind> kinds;  // SKIFF_GUARDED_BY(mu)
};

Registry& GetRegistry() {
  static Registry* registry = new Registry();  // never destroyed: used until exit
  return *registry;
}

bool IsValidName(const std::string& name) {
  if (name.empty()) return false;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

void Declare(const std::string& name, CounterKind kind) {
  SKIFF_CHECK(IsValidName(name));
  Registry& r = GetRegistry();
  std::lock_guard lock(r.mu);
  auto [it, inserted] = r.kinds.emplace(name, kind);
  SKIFF_CHECK(inserted || it->second == kind);
}

}  // namespace

void SetDeterministic(benchmark::State& state, const std::string& name, double value) {
  Declare(name, CounterKind::kDeterministic);
  state.counters[name] = benchmark::Counter(value);
}

void SetInfo(benchmark::State& state, const std::string& name, double value) {
  Declare(name, CounterKind::kInfo);
  state.counters[name] = benchmark::Counter(value);
}

void SetJudged(benchmark::State& state, const std::string& name, double value, Better better) {
  Declare(name, better == Better::kLower ? CounterKind::kJudgedLower : CounterKind::kJudgedHigher);
  state.counters[name] = benchmark::Counter(value);
}

std::map<std::string, CounterKind> CounterKinds() {
  Registry& r = GetRegistry();
  std::lock_guard lock(r.mu);
  return r.kinds;
}

const char* CounterKindName(CounterKind kind) {
  switch (kind) {
    case CounterKind::kDeterministic:
      return "deterministic";
    case CounterKind::kInfo:
      return "info";
    case CounterKind::kJudgedLower:
      return "judged_lower";
    case CounterKind::kJudgedHigher:
      return "judged_higher";
  }
  return "info";
}

}  // namespace skiff::bench
