#include "sqlite/statement.h"

#include <utility>

#include <sqlite3.h>

namespace skiff::sqlite {

Status Error(int rc, std::string message) {
  switch (rc & 0xFF) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_IOERR:
    case SQLITE_FULL:
    case SQLITE_CANTOPEN:
    case SQLITE_READONLY:
      return Unavailable(std::move(message));
    default:
      return Internal(std::move(message));
  }
}

Status ExecScript(sqlite3* db, std::string_view sql, uint64_t* sent) {
  const char* next = sql.data();
  const char* end = sql.data() + sql.size();
  while (next < end) {
    sqlite3_stmt* stmt = nullptr;
    const char* tail = nullptr;
    int rc = sqlite3_prepare_v2(db, next, static_cast<int>(end - next), &stmt, &tail);
    if (rc != SQLITE_OK) return Error(rc, std::string("SQLite: ") + sqlite3_errmsg(db));
    next = tail;
    if (stmt == nullptr) continue;  // whitespace or a comment
    ++*sent;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
    }
    sqlite3_finalize(stmt);
    if (rc != SQLITE_DONE) return Error(rc, std::string("SQLite: ") + sqlite3_errmsg(db));
  }
  return Status::Ok();
}

Result<std::unique_ptr<Statement>> Statement::Prepare(sqlite3* db, std::string_view sql) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v3(db, sql.data(), static_cast<int>(sql.size()),
                              SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
  if (rc != SQLITE_OK) {
    return Error(rc, std::string("SQLite prepare failed: ") + sqlite3_errmsg(db));
  }
  return std::unique_ptr<Statement>(new Statement(db, stmt));
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

void Statement::BindText(int index, std::string_view text) {
  // A null pointer would bind SQL NULL; an empty string_view may carry one.
  const char* data = text.data() != nullptr ? text.data() : "";
  sqlite3_bind_text(stmt_, index, data, static_cast<int>(text.size()), SQLITE_STATIC);
}

void Statement::BindInt64(int index, int64_t value) { sqlite3_bind_int64(stmt_, index, value); }

void Statement::BindNull(int index) { sqlite3_bind_null(stmt_, index); }

int64_t Statement::ColumnInt64(int column) const { return sqlite3_column_int64(stmt_, column); }

bool Statement::ColumnIsNull(int column) const {
  return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
}

Result<bool> Statement::Step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return Error(rc, std::string("SQLite: ") + sqlite3_errmsg(db_));
}

std::string_view Statement::ColumnText(int column) const {
  const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, column));
  return {text ? text : "", static_cast<size_t>(sqlite3_column_bytes(stmt_, column))};
}

Status Statement::Reset(Status status) {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
  return status;
}

}  // namespace skiff::sqlite
