#include "store/internal/pg_array.h"

namespace skiff::store::internal {

std::string PgArray(const std::vector<std::optional<std::string_view>>& items) {
  size_t size = 2;
  for (const auto& item : items) size += (item ? item->size() : 4) + 8;
  std::string out;
  out.reserve(size);
  out += '{';
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += ',';
    if (!items[i]) {
      out += "NULL";
      continue;
    }
    // Quoted elements: only '"' and '\' need a backslash; commas, braces and
    // the word NULL are plain text inside quotes.
    out += '"';
    for (char c : *items[i]) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    out += '"';
  }
  out += '}';
  return out;
}

}  // namespace skiff::store::internal
