// Validation of table names and document keys, shared by the stores, the
// server and the client so every layer rejects the same input the same way.
// Pure functions; thread-safe.
#ifndef SKIFF_DOC_NAMES_H_
#define SKIFF_DOC_NAMES_H_

#include <cstddef>
#include <string_view>

#include "base/status.h"

namespace skiff::doc {

inline constexpr size_t kMaxTableNameBytes = 64;
inline constexpr size_t kMaxKeyBytes = 1024;

// OK when `table` matches [A-Za-z0-9_-]{1,64}; bad_request otherwise, with a
// message naming the rule that failed.
Status ValidateTableName(std::string_view table);

// OK when `key` is non-empty, valid UTF-8 without U+0000 and at most 1 KiB;
// bad_request or too_large otherwise. Also the rule for device ids and users.
Status ValidateKey(std::string_view key);

// True when `text` is well-formed UTF-8 (no overlongs, no surrogates, nothing
// past U+10FFFF).
bool IsValidUtf8(std::string_view text);

}  // namespace skiff::doc

#endif  // SKIFF_DOC_NAMES_H_
