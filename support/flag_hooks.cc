#include "support/flag_hooks.h"

#include <vector>

namespace skiff::bench {
namespace {

std::vector<FlagHook>& Hooks() {
  static auto* hooks = new std::vector<FlagHook>();  // read by main until exit
  return *hooks;
}

}  // namespace

bool AddFlagHook(FlagHook hook) {
  Hooks().push_back(std::move(hook));
  return true;
}

FlagOutcome OfferFlag(const std::string& arg, std::string* error) {
  for (const FlagHook& hook : Hooks()) {
    FlagOutcome outcome = hook(arg, error);
    if (outcome != FlagOutcome::kNotMine) return outcome;
  }
  return FlagOutcome::kNotMine;
}

}  // namespace skiff::bench
