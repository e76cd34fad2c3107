// Flags a bench family adds to the suite's own main.
//
// The suite's main hands every argument it does not know itself to the hooks
// registered here before Google Benchmark sees argv (which rejects unknown
// flags). A family's support code registers its hook during static
// initialisation, so the main needs no knowledge of any family.
//
// Not thread-safe: registered during static initialisation, used by main.
#ifndef SKIFF_SUPPORT_FLAG_HOOKS_H_
#define SKIFF_SUPPORT_FLAG_HOOKS_H_

#include <functional>
#include <string>

namespace skiff::bench {

enum class FlagOutcome { kNotMine, kTaken, kBad };

// A hook looks at one argument ("--name=value"); on kBad it sets *error.
using FlagHook = std::function<FlagOutcome(const std::string& arg, std::string* error)>;

// Always returns true, for `const bool kHooked = AddFlagHook(...)`.
bool AddFlagHook(FlagHook hook);

// Offers `arg` to every hook; the first that takes it (or refuses it) wins.
FlagOutcome OfferFlag(const std::string& arg, std::string* error);

}  // namespace skiff::bench

#endif  // SKIFF_SUPPORT_FLAG_HOOKS_H_
