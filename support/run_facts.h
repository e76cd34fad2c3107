// RunFacts: what this process learned about the run while it ran (the
// PostgreSQL it talked to, the server an end-to-end case drove), for the
// JSON context. Recorded where the fact is known, so the context only ever
// describes what actually ran, never what was merely configured.
//
// Thread-safe: facts are guarded by a mutex.
#ifndef SKIFF_SUPPORT_RUN_FACTS_H_
#define SKIFF_SUPPORT_RUN_FACTS_H_

#include <map>
#include <string>

namespace skiff::support {

// Sets `key` (a context key, "skiff_postgres_version") to `value`; a later
// call with another value for the same key appends it (", "), so two
// targets in one run are both named.
void RecordFact(const std::string& key, const std::string& value);

// Every fact recorded so far.
std::map<std::string, std::string> Facts();

}  // namespace skiff::support

#endif  // SKIFF_SUPPORT_RUN_FACTS_H_
