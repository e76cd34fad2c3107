#include "store/internal/pg_array.h"

namespace skiff::store::internal {

std::string PgTextArray(const std::vector<const WriteBatch::Op*>& ops, OpField field) {
  size_t size = 2;
  for (const WriteBatch::Op* op : ops) size += op->value.size() + op->key.size() + 8;
  std::string out;
  out.reserve(size);
  out += '{';
  for (size_t i = 0; i < ops.size(); ++i) {
    if (i > 0) out += ',';
    const std::string& text = field == OpField::kTable ? ops[i]->table
                              : field == OpField::kKey ? ops[i]->key
                                                       : ops[i]->value;
    // Quoted elements: only '"' and '\' need a backslash; NULL, commas and
    // braces are plain text inside quotes.
    out += '"';
    for (char c : text) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    out += '"';
  }
  out += '}';
  return out;
}

}  // namespace skiff::store::internal
