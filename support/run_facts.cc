#include "support/run_facts.h"

#include <algorithm>
#include <mutex>

namespace skiff::support {
namespace {

struct Registry {
  std::mutex mu;
  std::map<std::string, std::string> facts;  // SKIFF_GUARDED_BY(mu)
};

Registry& Get() {
  static auto* registry = new Registry();  // read by main after the run
  return *registry;
}

}  // namespace

void RecordFact(const std::string& key, const std::string& value) {
  Registry& r = Get();
  std::lock_guard lock(r.mu);
  auto [it, inserted] = r.facts.emplace(key, value);
  if (inserted || value.empty()) return;
  // Append a value not yet listed; the list stays in first-seen order.
  const std::string& list = it->second;
  size_t at = 0;
  while (at <= list.size()) {
    const size_t end = std::min(list.find(", ", at), list.size());
    if (list.compare(at, end - at, value) == 0 && end - at == value.size()) return;
    at = end + 2;
  }
  it->second += ", " + value;
}

std::map<std::string, std::string> Facts() {
  Registry& r = Get();
  std::lock_guard lock(r.mu);
  return r.facts;
}

}  // namespace skiff::support
