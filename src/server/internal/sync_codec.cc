#include "server/internal/sync_codec.h"

#include <utility>

namespace skiff::server::internal {
namespace {

const doc::Value* Find(const doc::Value& obj, const char* name) {
  auto it = obj.find(name);
  return it == obj.end() ? nullptr : &*it;
}

Status FieldError(const std::string& field, const char* rule) {
  return BadRequest("field '" + field + "' " + rule);
}

Status GetString(const doc::Value& obj, const char* name, const std::string& label,
                 std::string* out) {
  const doc::Value* v = Find(obj, name);
  if (v == nullptr) return BadRequest("missing field '" + label + "'");
  if (!v->is_string()) return FieldError(label, "must be a string");
  *out = v->get_ref<const std::string&>();
  return Status::Ok();
}

// An optional unsigned integer; `required` makes absence an error.
Status GetUnsigned(const doc::Value& obj, const char* name, const std::string& label, bool required,
                   uint64_t* out) {
  const doc::Value* v = Find(obj, name);
  if (v == nullptr || v->is_null()) {
    if (required) return BadRequest("missing field '" + label + "'");
    return Status::Ok();
  }
  if (!v->is_number_unsigned()) return FieldError(label, "must be an unsigned integer");
  *out = v->get<uint64_t>();
  return Status::Ok();
}

Status DecodeLimit(const doc::Value& obj, Request& r) {
  uint64_t limit = kDefaultSyncPage;
  SKIFF_RETURN_IF_ERROR(GetUnsigned(obj, "limit", "limit", false, &limit));
  // The engine bounds it from above with its own page limit.
  if (limit == 0) return FieldError("limit", "must be at least 1");
  r.limit = static_cast<size_t>(limit);
  return Status::Ok();
}

Status DecodePush(doc::Value& obj, Request& r) {
  SKIFF_RETURN_IF_ERROR(GetString(obj, "device", "device", &r.push.device));
  auto changes = obj.find("changes");
  if (changes == obj.end()) return BadRequest("missing field 'changes'");
  if (!changes->is_array()) return FieldError("changes", "must be an array");
  r.push.changes.reserve(changes->size());
  for (size_t i = 0; i < changes->size(); ++i) {
    doc::Value& c = (*changes)[i];
    const std::string at = "changes[" + std::to_string(i) + "]";
    if (!c.is_object()) return FieldError(at, "must be an object");
    sync::PushChange change;
    SKIFF_RETURN_IF_ERROR(GetUnsigned(c, "seq", at + ".seq", true, &change.seq));
    SKIFF_RETURN_IF_ERROR(GetString(c, "table", at + ".table", &change.table));
    SKIFF_RETURN_IF_ERROR(GetString(c, "key", at + ".key", &change.key));
    SKIFF_RETURN_IF_ERROR(GetString(c, "group", at + ".group", &change.group));
    auto value = c.find("value");
    if (value == c.end()) return BadRequest("missing field '" + at + ".value'");
    // null deletes the row; any other JSON is its new value.
    if (!value->is_null()) change.value = value->dump();
    r.push.changes.push_back(std::move(change));
  }
  return Status::Ok();
}

Status DecodeBootstrap(const doc::Value& obj, Request& r) {
  SKIFF_RETURN_IF_ERROR(DecodeLimit(obj, r));
  const doc::Value* after = Find(obj, "after");
  if (after == nullptr || after->is_null()) return Status::Ok();
  const char* rule = "must be null or [group, table, key] (three strings)";
  if (!after->is_array() || after->size() != 3) return FieldError("after", rule);
  for (const doc::Value& part : *after) {
    if (!part.is_string()) return FieldError("after", rule);
  }
  r.sync_after.group = (*after)[0].get<std::string>();
  r.sync_after.table = (*after)[1].get<std::string>();
  r.sync_after.key = (*after)[2].get<std::string>();
  if (r.sync_after.group.empty()) return FieldError("after", "must name a group");
  return Status::Ok();
}

// Names (groups, tables, keys) are almost always plain ASCII with nothing to
// escape: those are copied at once; anything else goes through the JSON
// library, which also replaces invalid UTF-8.
void AppendString(std::string& out, const std::string& s) {
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x80 || c == '"' || c == '\\') {
      out += doc::Value(s).dump(-1, ' ', false, doc::Value::error_handler_t::replace);
      return;
    }
  }
  out += '"';
  out += s;
  out += '"';
}

void AppendHead(std::string& out, uint64_t id) {
  out += "{\"id\":";
  out += std::to_string(id);
  out += ",\"ok\":true";
}

}  // namespace

Status DecodeSyncFields(doc::Value& obj, Request& r) {
  switch (r.op) {
    case Op::kPush:
      return DecodePush(obj, r);
    case Op::kPull:
      SKIFF_RETURN_IF_ERROR(GetUnsigned(obj, "since", "since", false, &r.since));
      return DecodeLimit(obj, r);
    case Op::kBootstrap:
      return DecodeBootstrap(obj, r);
    case Op::kWait:
      SKIFF_RETURN_IF_ERROR(GetUnsigned(obj, "since", "since", true, &r.since));
      r.timeout_ms = kDefaultWaitMs;
      return GetUnsigned(obj, "timeout_ms", "timeout_ms", false, &r.timeout_ms);
    default:
      return Internal("not a sync op");
  }
}

std::string EncodePushReply(uint64_t id, const sync::PushReply& reply) {
  std::string out;
  AppendHead(out, id);
  out += ",\"applied\":" + std::to_string(reply.applied);
  out += ",\"last_seq\":" + std::to_string(reply.last_seq);
  out += ",\"cursor\":" + std::to_string(reply.cursor);
  out += '}';
  return out;
}

std::string EncodePullReply(uint64_t id, const sync::PullReply& reply) {
  std::string out;
  size_t bytes = 64;
  for (const store::Change& c : reply.changes) {
    bytes += 64 + c.table.size() + c.key.size() + c.group.size() + (c.value ? c.value->size() : 4);
  }
  out.reserve(bytes);
  AppendHead(out, id);
  out += ",\"changes\":[";
  for (size_t i = 0; i < reply.changes.size(); ++i) {
    const store::Change& c = reply.changes[i];
    if (i > 0) out += ',';
    out += "{\"sync_id\":" + std::to_string(c.sync_id) + ",\"table\":";
    AppendString(out, c.table);
    out += ",\"key\":";
    AppendString(out, c.key);
    out += ",\"group\":";
    AppendString(out, c.group);
    out += ",\"value\":";
    out += c.value ? *c.value : "null";  // stored values are JSON text already
    out += '}';
  }
  out += "],\"cursor\":" + std::to_string(reply.cursor);
  out += reply.more ? ",\"more\":true}" : ",\"more\":false}";
  return out;
}

std::string EncodeBootstrapReply(uint64_t id, const sync::BootstrapReply& reply) {
  std::string out;
  size_t bytes = 64;
  for (const store::SyncRow& row : reply.rows) {
    bytes += 64 + row.group.size() + row.table.size() + row.key.size() + row.value.size();
  }
  out.reserve(bytes);
  AppendHead(out, id);
  // The cursor and the next page's `after` come before the rows, so that a
  // client can ask for the next page before it reads this one's rows.
  out += ",\"cursor\":" + std::to_string(reply.cursor) + ",\"next\":";
  if (reply.next) {
    out += '[';
    AppendString(out, reply.next->group);
    out += ',';
    AppendString(out, reply.next->table);
    out += ',';
    AppendString(out, reply.next->key);
    out += ']';
  } else {
    out += "null";
  }
  out += ",\"rows\":[";
  for (size_t i = 0; i < reply.rows.size(); ++i) {
    const store::SyncRow& row = reply.rows[i];
    if (i > 0) out += ',';
    out += "{\"group\":";
    AppendString(out, row.group);
    out += ",\"table\":";
    AppendString(out, row.table);
    out += ",\"key\":";
    AppendString(out, row.key);
    out += ",\"value\":";
    out += row.value;
    out += ",\"sync_id\":";
    out += std::to_string(row.sync_id);
    out += '}';
  }
  out += "]}";
  return out;
}

std::string EncodeWaitReply(uint64_t id, const sync::WaitReply& reply) {
  std::string out;
  AppendHead(out, id);
  out += reply.changed ? ",\"changed\":true" : ",\"changed\":false";
  out += ",\"cursor\":" + std::to_string(reply.cursor) + "}";
  return out;
}

}  // namespace skiff::server::internal
