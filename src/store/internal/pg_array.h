// Text form of a PostgreSQL array parameter ({"a","b\"c",NULL}), so a whole
// batch travels as one bound parameter per column. The values are parameters,
// never SQL text, so no user input is ever spliced into a statement.
//
// Pure functions; thread-safe.
#ifndef SKIFF_STORE_INTERNAL_PG_ARRAY_H_
#define SKIFF_STORE_INTERNAL_PG_ARRAY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace skiff::store::internal {

// The array literal of `items`; nullopt becomes SQL NULL. Usable for text[]
// and, with digits only, bigint[].
std::string PgArray(const std::vector<std::optional<std::string_view>>& items);

// Builds the item list by applying `field` to each element of `rows`.
template <typename Rows, typename Field>
std::string PgArrayOf(const Rows& rows, Field field) {
  std::vector<std::optional<std::string_view>> items;
  items.reserve(rows.size());
  for (const auto& row : rows) items.push_back(field(row));
  return PgArray(items);
}

}  // namespace skiff::store::internal

#endif  // SKIFF_STORE_INTERNAL_PG_ARRAY_H_
