// The SQLite pieces the store and the device's storage share: a prepared
// statement (prepare, bind, step, read columns, reset) whose failures are
// Status values, a script runner, and the one mapping of SQLite result
// codes to Status.
//
// Not thread-safe: a statement belongs to its connection, and the owner
// serialises use of that connection.
#ifndef SKIFF_SQLITE_STATEMENT_H_
#define SKIFF_SQLITE_STATEMENT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"

struct sqlite3;
struct sqlite3_stmt;

namespace skiff::sqlite {

// unavailable for conditions a retry may clear (busy, locked, I/O, full
// disk, a file that cannot be opened or written), internal for everything
// else (corruption, misuse).
Status Error(int rc, std::string message);

// Runs every statement of `sql` in order, adding the number stepped to
// *sent (one that failed included). The first failure stops it.
Status ExecScript(sqlite3* db, std::string_view sql, uint64_t* sent);

class Statement {
 public:
  // The statement is prepared to be kept and run many times.
  static Result<std::unique_ptr<Statement>> Prepare(sqlite3* db, std::string_view sql);
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

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
  Status Reset(Status status = Status::Ok());

 private:
  Statement(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  sqlite3* db_;
  sqlite3_stmt* stmt_;
};

}  // namespace skiff::sqlite

#endif  // SKIFF_SQLITE_STATEMENT_H_
