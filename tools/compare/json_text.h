// Repairs the one way Google Benchmark's JSON output is not JSON: 1.7.1 writes
// non-finite doubles as bare NaN, -NaN, Infinity and -Infinity (for example
// the "cv" aggregate of a counter whose mean is 0). Pure function;
// thread-safe.
#ifndef SKIFF_COMPARE_JSON_TEXT_H_
#define SKIFF_COMPARE_JSON_TEXT_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace skiff::compare {

// Returns `text` with every bare NaN / Infinity token (optionally signed)
// outside string literals replaced by null. Anything else is left alone, so
// malformed input stays malformed for the parser to report.
std::string NullNonFiniteNumbers(std::string_view text);

// Google Benchmark output nests four levels deep; anything past this is not
// a run, and copying such a tree would recurse once per level.
inline constexpr size_t kMaxRunNesting = 64;

// The deepest nesting of arrays and objects in `text`, counted outside
// string literals without building anything.
size_t MaxNesting(std::string_view text);

}  // namespace skiff::compare

#endif  // SKIFF_COMPARE_JSON_TEXT_H_
