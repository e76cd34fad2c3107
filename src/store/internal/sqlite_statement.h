// A prepared SQLite statement with the few bindings the store uses, and the
// mapping of SQLite result codes to Status.
//
// Not thread-safe: the owning store serialises use of its connection.
#ifndef SKIFF_STORE_INTERNAL_SQLITE_STATEMENT_H_
#define SKIFF_STORE_INTERNAL_SQLITE_STATEMENT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include <sqlite3.h>

#include "base/status.h"

namespace skiff::store::internal {

// unavailable for conditions a retry may clear (busy, locked, I/O, full disk),
// internal for everything else (corruption, misuse).
Status SqliteError(int rc, std::string message);

// Runs every statement of `sql` in order, adding the number stepped to *sent.
Status ExecSqliteScript(sqlite3* db, std::string_view sql, uint64_t* sent);

class SqliteStatement {
 public:
  static Result<std::unique_ptr<SqliteStatement>> Prepare(sqlite3* db, std::string_view sql);
  ~SqliteStatement();
  SqliteStatement(const SqliteStatement&) = delete;
  SqliteStatement& operator=(const SqliteStatement&) = delete;

  // Text is bound without a copy: it must outlive the next Step().
  void BindText(int index, std::string_view text);
  void BindInt64(int index, int64_t value);
  void BindNull(int index);

  // True when a row is ready, false when the statement is done.
  Result<bool> Step();
  std::string_view ColumnText(int column) const;
  int64_t ColumnInt64(int column) const;
  bool ColumnIsNull(int column) const;

  // Resets and clears bindings so the statement can run again, and returns
  // `status`. (sqlite3_reset repeats the last step's error, which `status`
  // already carries.)
  Status Reset(Status status);

 private:
  SqliteStatement(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  sqlite3* db_;
  sqlite3_stmt* stmt_;
};

}  // namespace skiff::store::internal

#endif  // SKIFF_STORE_INTERNAL_SQLITE_STATEMENT_H_
