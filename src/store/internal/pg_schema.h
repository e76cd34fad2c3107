// The SQL of PostgresStore: the schema it creates when missing and the
// statements it prepares on every connection, kept apart from the code that
// sends them so the whole text of the store's SQL reads in one place.
//
// Statement names: a write prepared by PrepareWrite also exists as
// `name` + "+m", the same write with the commit mark's CTE in front, whose
// last two parameters are the mark's (instance, seq). The batch statements
// exist only marked:
// - "write_all+m": a whole batch in one statement (see pg_schema.cc);
// - "write_all_counted+m": the same, also setting the sync counter ($14);
// - "write_all_fenced+m": the same, writing only while the batch's cluster
//   fences hold ($14-$17), returning false when one did not, and logging
//   the changes of watched tables ($18-$23) for watches across the cluster.
//
// Pure functions and constants; thread-safe (a connection is the caller's).
#ifndef SKIFF_STORE_INTERNAL_PG_SCHEMA_H_
#define SKIFF_STORE_INTERNAL_PG_SCHEMA_H_

#include <pqxx/pqxx>

namespace skiff::store::internal {

// Creates every table of the store when missing, under a transaction-scoped
// advisory lock so stores opening together do not race. Run in one
// transaction.
extern const char* const kPgSchemaSql;
// The statements in kPgSchemaSql, for the statement counter.
inline constexpr int kPgSchemaStatements = 14;

// Prepares every statement of the store on `conn`. Throws what libpqxx
// throws.
void PreparePgStatements(pqxx::connection& conn);

}  // namespace skiff::store::internal

#endif  // SKIFF_STORE_INTERNAL_PG_SCHEMA_H_
