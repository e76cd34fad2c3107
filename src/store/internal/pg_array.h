// Text form of a PostgreSQL text[] parameter ({"a","b\"c"}), so a whole batch
// travels as one bound parameter per column. The values are parameters, never
// SQL text, so no user input is ever spliced into a statement.
//
// Pure function; thread-safe.
#ifndef SKIFF_STORE_INTERNAL_PG_ARRAY_H_
#define SKIFF_STORE_INTERNAL_PG_ARRAY_H_

#include <string>
#include <vector>

#include "store/write_batch.h"

namespace skiff::store::internal {

enum class OpField { kTable, kKey, kValue };

// The array literal of one field of every op in `ops`.
std::string PgTextArray(const std::vector<const WriteBatch::Op*>& ops, OpField field);

}  // namespace skiff::store::internal

#endif  // SKIFF_STORE_INTERNAL_PG_ARRAY_H_
