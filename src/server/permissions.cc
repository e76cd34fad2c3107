#include "server/permissions.h"

#include <algorithm>

#include "doc/names.h"

namespace skiff::server {

bool Permissions::Allows(const std::vector<std::string>& list, std::string_view table) {
  // System tables hold server state (users); no grant reaches them.
  if (table.empty() || table.front() == '$') return false;
  return std::any_of(list.begin(), list.end(),
                     [&](const std::string& t) { return t == kAllTables || t == table; });
}

Result<std::vector<std::string>> ParseTableList(std::string_view text) {
  std::vector<std::string> tables;
  while (!text.empty()) {
    size_t comma = text.find(',');
    std::string_view entry = text.substr(0, comma);
    if (entry != kAllTables) {
      Status valid = doc::ValidateTableName(entry);
      if (!valid.ok()) {
        return BadRequest("table list entry '" + std::string(entry) + "': " + valid.message());
      }
    }
    tables.emplace_back(entry);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
    if (text.empty()) return BadRequest("table list ends with a comma");
  }
  return tables;
}

}  // namespace skiff::server
