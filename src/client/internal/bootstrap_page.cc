#include "client/internal/bootstrap_page.h"

#include <string>
#include <utility>

#include "client/internal/json_reader.h"

namespace skiff::client::internal {
namespace {

Status Malformed(const char* what) {
  return Internal(std::string("malformed bootstrap reply: ") + what);
}

// One element of "rows": {"group","table","key","value","sync_id"} in any
// order; other members are skipped.
Status ReadRow(JsonReader& in, RowWrite* row) {
  std::string_view name;
  if (!in.BeginObject()) return Malformed("a row is not an object");
  bool has_group = false, has_table = false, has_key = false, has_value = false;
  for (bool done = false;;) {
    if (!in.NextMember(&name, &done)) return Malformed("a row is not an object");
    if (done) break;
    bool ok;
    if (name == "group") {
      ok = has_group = in.String(&row->name.group);
    } else if (name == "table") {
      ok = has_table = in.String(&row->name.table);
    } else if (name == "key") {
      ok = has_key = in.String(&row->name.key);
    } else if (name == "value") {
      std::string_view text;
      ok = has_value = in.Skip(&text);
      row->value.emplace(text);
    } else {
      ok = in.Skip();
    }
    if (!ok) return Malformed("a row's member is malformed");
  }
  if (!has_group || !has_table || !has_key || !has_value) return Malformed("a row lacks a member");
  return Status::Ok();
}

Status ReadNext(JsonReader& in, std::optional<RowName>* next) {
  if (in.Null()) {
    next->reset();
    return Status::Ok();
  }
  RowName n;
  bool done = false;
  if (!in.BeginArray() || !in.NextElement(&done) || done || !in.String(&n.group) ||
      !in.NextElement(&done) || done || !in.String(&n.table) || !in.NextElement(&done) || done ||
      !in.String(&n.key) || !in.NextElement(&done) || !done) {
    return Malformed("'next' is neither null nor three strings");
  }
  *next = std::move(n);
  return Status::Ok();
}

}  // namespace

Result<BootstrapPage> ReadBootstrapPage(std::string_view reply, const OnNextPage& on_next) {
  JsonReader in(reply);
  BootstrapPage page;
  bool has_rows = false, has_cursor = false, has_next = false;
  std::string_view name;
  if (!in.BeginObject()) return Malformed("not an object");
  for (bool done = false;;) {
    if (!in.NextMember(&name, &done)) return Malformed("not an object");
    if (done) break;
    if (name == "rows") {
      has_rows = true;
      if (!in.BeginArray()) return Malformed("'rows' is not an array");
      // Room for a row per 256 bytes of reply (a 200-byte value makes a row
      // of about 285) spares most of the vector's regrowth; smaller rows
      // regrow it once or twice.
      page.rows.reserve(reply.size() / 256);
      for (bool end = false;;) {
        if (!in.NextElement(&end)) return Malformed("'rows' is not an array");
        if (end) break;
        RowWrite& row = page.rows.emplace_back();
        SKIFF_RETURN_IF_ERROR(ReadRow(in, &row));
      }
    } else if (name == "cursor") {
      has_cursor = true;
      if (!in.Unsigned(&page.cursor)) return Malformed("'cursor' is not a number");
    } else if (name == "next") {
      // Twice would ask for a page twice.
      if (has_next) return Malformed("'next' given twice");
      has_next = true;
      SKIFF_RETURN_IF_ERROR(ReadNext(in, &page.next));
      if (!has_rows && on_next) on_next(page.next);
    } else if (!in.Skip()) {
      return Malformed("a member is malformed");
    }
  }
  if (!in.AtEnd()) return Malformed("text after the object");
  if (!has_rows) return Internal("reply lacks 'rows'");
  if (!has_cursor) return Internal("reply lacks 'cursor'");
  if (!has_next) return Internal("reply lacks 'next'");
  return page;
}

}  // namespace skiff::client::internal
