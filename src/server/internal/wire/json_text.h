// JSON strings written into reply text. Names (tables, keys, groups) are
// nearly always plain printable ASCII, which needs no escaping and is
// copied as is: a near reply writes hundreds of keys, and building a
// doc::Value and its serializer for each was a quarter of the op's CPU.
// Anything else takes the serializer's path, which escapes and replaces
// invalid UTF-8 (U+FFFD), so a reply is always valid JSON.
// Pure functions; thread-safe.
#ifndef SKIFF_SERVER_INTERNAL_WIRE_JSON_TEXT_H_
#define SKIFF_SERVER_INTERNAL_WIRE_JSON_TEXT_H_

#include <algorithm>
#include <string>
#include <string_view>

#include "doc/document.h"

namespace skiff::server::internal {

// True for a byte that stands for itself inside a JSON string.
inline bool IsPlainJsonChar(char ch) {
  const auto b = static_cast<unsigned char>(ch);
  return b >= 0x20 && b < 0x7f && b != '"' && b != '\\';
}

// Appends `s` as a JSON string.
inline void AppendJsonString(std::string& out, std::string_view s) {
  if (!std::all_of(s.begin(), s.end(), IsPlainJsonChar)) {
    out += doc::Value(std::string(s)).dump(-1, ' ', false, doc::Value::error_handler_t::replace);
    return;
  }
  out += '"';
  out += s;
  out += '"';
}

inline std::string JsonString(std::string_view s) {
  std::string out;
  AppendJsonString(out, s);
  return out;
}

}  // namespace skiff::server::internal

#endif  // SKIFF_SERVER_INTERNAL_WIRE_JSON_TEXT_H_
