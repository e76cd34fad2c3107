// Seeded generators of test and benchmark documents.
//
// Every draw comes from std::mt19937_64 (whose sequence the C++ standard fixes)
// through bounded draws written here, never through the standard
// distributions, whose output differs between library implementations. So a
// seed gives the same documents, byte for byte, on every run and machine, and
// counters computed from them can be deterministic.
//
// A DocGenerator is thread-compatible: use one per thread.
#ifndef SKIFF_SUPPORT_DOC_GENERATOR_H_
#define SKIFF_SUPPORT_DOC_GENERATOR_H_

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>

#include "doc/document.h"

namespace skiff::support {

class DocGenerator {
 public:
  explicit DocGenerator(uint64_t seed) : rng_(seed) {}

  // A "guild": settings object, member objects with role id arrays, nested
  // content blocks, unicode names. About 940 bytes of compact JSON on average
  // (between roughly 700 and 1,200).
  doc::Value Guild();

  // One guild with enough members to be about 870 KB of compact JSON.
  doc::Value LargeGuild(size_t target_bytes = 870 * 1000);

  // A sync-style row of about 200 bytes.
  doc::Value Row();

  // An arbitrary value for property tests: every JSON type, integers across
  // the whole int64/uint64 range, doubles, unicode and escapes in keys and
  // strings, empty objects and arrays, nesting up to `max_depth` containers.
  doc::Value Random(size_t max_depth = 8);

  // Uniform in [0, n) (n > 0), identical on every platform.
  uint64_t Below(uint64_t n);
  // Uniform in [lo, hi].
  int64_t Between(int64_t lo, int64_t hi);
  // True with probability percent/100.
  bool Chance(unsigned percent) { return Below(100) < percent; }
  // Uniform in [0, 1) with 53 random bits.
  double Unit() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }

 private:
  std::string Snowflake();
  std::string Name(size_t min_len, size_t max_len);
  std::string Word();
  doc::Value Member();
  doc::Value Block(size_t depth);

  std::mt19937_64 rng_;
};

// The guild document for `index` under `seed`, independent of what else was
// generated, so a reader can regenerate the expected value of any key.
doc::Value GuildDocument(uint64_t seed, uint64_t index);

// The key used for `index` by suites that load many guilds ("guild:000042").
std::string GuildKey(uint64_t index);

}  // namespace skiff::support

#endif  // SKIFF_SUPPORT_DOC_GENERATOR_H_
