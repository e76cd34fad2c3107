#include "server/internal/protocol.h"

#include <array>
#include <charconv>
#include <utility>

#include "doc/names.h"
#include "server/internal/sync_codec.h"
#include "store/store.h"

namespace skiff::server::internal {
namespace {

struct OpEntry {
  std::string_view name;
  Op op;
};
constexpr std::array<OpEntry, 17> kOps = {{{"login", Op::kLogin},
                                           {"logout", Op::kLogout},
                                           {"ping", Op::kPing},
                                           {"echo", Op::kEcho},
                                           {"get", Op::kGet},
                                           {"has", Op::kHas},
                                           {"set", Op::kSet},
                                           {"delete", Op::kDelete},
                                           {"add", Op::kAdd},
                                           {"merge", Op::kMerge},
                                           {"all", Op::kAll},
                                           {"stats", Op::kStats},
                                           {"push", Op::kPush},
                                           {"pull", Op::kPull},
                                           {"bootstrap", Op::kBootstrap},
                                           {"wait", Op::kWait},
                                           {"near", Op::kNear}}};

std::string Json(const doc::Value& v) {
  // Replace rather than throw on invalid UTF-8: parsed input is already
  // valid, this only guards messages that quote raw bytes.
  return v.dump(-1, ' ', false, doc::Value::error_handler_t::replace);
}

// Looks up a member of the request object; nullptr when absent.
const doc::Value* Find(const doc::Value& obj, const char* name) {
  auto it = obj.find(name);
  return it == obj.end() ? nullptr : &*it;
}

Status Missing(const char* name) { return BadRequest(std::string("missing field '") + name + "'"); }

Status GetString(const doc::Value& obj, const char* name, std::string* out) {
  const doc::Value* v = Find(obj, name);
  if (v == nullptr) return Missing(name);
  if (!v->is_string()) return BadRequest(std::string("field '") + name + "' must be a string");
  *out = v->get_ref<const std::string&>();
  return Status::Ok();
}

Status GetAny(doc::Value& obj, const char* name, doc::Value* out) {
  auto it = obj.find(name);
  if (it == obj.end()) return Missing(name);
  *out = std::move(*it);
  return Status::Ok();
}

Status Prefix(const char* field, Status s) {
  if (s.ok()) return s;
  return Status(s.code(), std::string("field '") + field + "': " + s.message());
}

Status GetTableKey(const doc::Value& obj, Request& r, bool need_key) {
  SKIFF_RETURN_IF_ERROR(GetString(obj, "table", &r.table));
  SKIFF_RETURN_IF_ERROR(Prefix("table", doc::ValidateTableName(r.table)));
  if (!need_key) return Status::Ok();
  SKIFF_RETURN_IF_ERROR(GetString(obj, "key", &r.key));
  return Prefix("key", doc::ValidateKey(r.key));
}

Status DecodeAll(const doc::Value& obj, Request& r) {
  SKIFF_RETURN_IF_ERROR(GetTableKey(obj, r, false));
  if (const doc::Value* after = Find(obj, "after"); after != nullptr && !after->is_null()) {
    if (!after->is_string()) return BadRequest("field 'after' must be a string or null");
    r.after = after->get_ref<const std::string&>();
    if (!r.after.empty()) SKIFF_RETURN_IF_ERROR(Prefix("after", doc::ValidateKey(r.after)));
  }
  r.limit = store::kDefaultScanLimit;
  if (const doc::Value* limit = Find(obj, "limit"); limit != nullptr && !limit->is_null()) {
    if (!limit->is_number_integer() || limit->get<int64_t>() < 1 ||
        limit->get<uint64_t>() > store::kMaxScanLimit) {
      return BadRequest("field 'limit' must be an integer from 1 to " +
                        std::to_string(store::kMaxScanLimit));
    }
    r.limit = limit->get<size_t>();
  }
  return Status::Ok();
}

Status DecodeAdd(doc::Value& obj, Request& r) {
  SKIFF_RETURN_IF_ERROR(GetTableKey(obj, r, true));
  // A missing path means the document itself, like [].
  if (const doc::Value* path = Find(obj, "path"); path != nullptr) {
    if (!path->is_array()) return BadRequest("field 'path' must be an array of strings");
    for (const doc::Value& part : *path) {
      if (!part.is_string()) return BadRequest("field 'path' must be an array of strings");
      r.path.push_back(part.get<std::string>());
    }
  }
  SKIFF_RETURN_IF_ERROR(GetAny(obj, "delta", &r.value));
  if (!r.value.is_number()) return BadRequest("field 'delta' must be a number");
  return Status::Ok();
}

// A number field; nullopt when absent (or null) and not `required`.
Result<std::optional<double>> GetNumber(const doc::Value& obj, const char* name, bool required) {
  const doc::Value* v = Find(obj, name);
  if (v == nullptr || (!required && v->is_null())) {
    if (required) return Missing(name);
    return std::optional<double>();
  }
  if (!v->is_number()) return BadRequest(std::string("field '") + name + "' must be a number");
  return std::optional<double>(v->get<double>());
}

// An optional boolean field; `*flag` is left alone when absent (or null).
Status GetFlag(const doc::Value& obj, const char* name, bool* flag) {
  const doc::Value* v = Find(obj, name);
  if (v == nullptr || v->is_null()) return Status::Ok();
  if (!v->is_boolean())
    return BadRequest(std::string("field '") + name + "' must be true or false");
  *flag = v->get<bool>();
  return Status::Ok();
}

// Types here; ranges in GeoIndex::CheckQuery, which the index runs on every
// query (the messages name the fields the same way).
Status DecodeNear(const doc::Value& obj, Request& r) {
  SKIFF_RETURN_IF_ERROR(GetTableKey(obj, r, false));
  SKIFF_ASSIGN_OR_RETURN(std::optional<double> lat, GetNumber(obj, "lat", true));
  SKIFF_ASSIGN_OR_RETURN(std::optional<double> lon, GetNumber(obj, "lon", true));
  r.geo.lat = *lat;
  r.geo.lon = *lon;
  if (const doc::Value* limit = Find(obj, "limit"); limit != nullptr && !limit->is_null()) {
    const bool in_range = limit->is_number_unsigned() && limit->get<uint64_t>() >= 1 &&
                          limit->get<uint64_t>() <= GeoIndex::kMaxLimit;
    if (!in_range) {
      return BadRequest("field 'limit' must be an integer from 1 to " +
                        std::to_string(GeoIndex::kMaxLimit));
    }
    r.geo.limit = limit->get<size_t>();
  }
  SKIFF_ASSIGN_OR_RETURN(r.geo.radius_m, GetNumber(obj, "radius_m", false));
  if (const doc::Value* box = Find(obj, "box_m"); box != nullptr && !box->is_null()) {
    if (!box->is_array() || box->size() != 2 || !(*box)[0].is_number() || !(*box)[1].is_number()) {
      return BadRequest("field 'box_m' must be [width, height], two numbers of metres");
    }
    r.geo.box_w_m = (*box)[0].get<double>();
    r.geo.box_h_m = (*box)[1].get<double>();
  }
  SKIFF_RETURN_IF_ERROR(GetFlag(obj, "values", &r.values));
  return GetFlag(obj, "columns", &r.columns);
}

Status DecodeFields(doc::Value& obj, Request& r) {
  switch (r.op) {
    case Op::kLogin:
      SKIFF_RETURN_IF_ERROR(GetString(obj, "user", &r.user));
      return GetString(obj, "secret", &r.secret);
    case Op::kLogout:
    case Op::kPing:
    case Op::kStats:
      return Status::Ok();
    case Op::kEcho:
      return GetAny(obj, "data", &r.value);
    case Op::kGet:
    case Op::kHas:
    case Op::kDelete:
      return GetTableKey(obj, r, true);
    case Op::kSet:
      SKIFF_RETURN_IF_ERROR(GetTableKey(obj, r, true));
      return GetAny(obj, "value", &r.value);
    case Op::kMerge:
      SKIFF_RETURN_IF_ERROR(GetTableKey(obj, r, true));
      return GetAny(obj, "patch", &r.value);
    case Op::kAdd:
      return DecodeAdd(obj, r);
    case Op::kAll:
      return DecodeAll(obj, r);
    case Op::kPush:
    case Op::kPull:
    case Op::kBootstrap:
    case Op::kWait:
      return DecodeSyncFields(obj, r);
    case Op::kNear:
      return DecodeNear(obj, r);
  }
  return Internal("unhandled op");
}

// `{"id":N` (or `{"id":null`), the start of every reply.
void AppendId(std::string& out, std::optional<uint64_t> id) {
  out += "{\"id\":";
  if (!id) {
    out += "null";
    return;
  }
  char digits[24];
  out.append(digits, std::to_chars(digits, digits + sizeof digits, *id).ptr);
}

}  // namespace

std::string_view OpName(Op op) {
  for (const OpEntry& e : kOps) {
    if (e.op == op) return e.name;
  }
  return "?";
}

bool AllowedBeforeLogin(Op op) { return op == Op::kLogin || op == Op::kPing || op == Op::kEcho; }

Result<Request> DecodeRequest(std::string_view text, const doc::Limits& limits,
                              std::optional<uint64_t>* id) {
  id->reset();
  SKIFF_ASSIGN_OR_RETURN(doc::Value parsed, doc::Parse(text, limits));
  doc::Value& obj = parsed;
  if (!obj.is_object()) return BadRequest("a request must be a JSON object");

  Request r;
  const doc::Value* id_field = Find(obj, "id");
  if (id_field == nullptr) return Missing("id");
  if (!id_field->is_number_unsigned()) {
    return BadRequest("field 'id' must be an unsigned integer");
  }
  r.id = id_field->get<uint64_t>();
  *id = r.id;

  const doc::Value* op = Find(obj, "op");
  if (op == nullptr) return Missing("op");
  if (!op->is_string()) return BadRequest("field 'op' must be a string");
  const std::string& name = op->get_ref<const std::string&>();
  bool known = false;
  for (const OpEntry& e : kOps) {
    if (e.name == name) {
      r.op = e.op;
      known = true;
      break;
    }
  }
  if (!known) return BadRequest("unknown op " + Json(doc::Value(name)));
  SKIFF_RETURN_IF_ERROR(DecodeFields(obj, r));
  // Each path element can add a level of nesting to the stored document.
  if (r.path.size() >= limits.max_depth) {
    return TooLarge("field 'path' has " + std::to_string(r.path.size()) +
                    " elements; documents nest at most " + std::to_string(limits.max_depth - 1) +
                    " levels");
  }
  return r;
}

std::string EncodeOk(uint64_t id, const doc::Value& fields) {
  std::string out;
  AppendId(out, id);
  out += ",\"ok\":true";
  if (fields.is_object()) {
    for (auto it = fields.begin(); it != fields.end(); ++it) {
      out += ',';
      out += Json(doc::Value(it.key()));
      out += ':';
      out += Json(it.value());
    }
  }
  out += '}';
  return out;
}

std::string EncodeOkRaw(uint64_t id, std::string_view member, std::string_view json_text) {
  std::string out;
  out.reserve(32 + member.size() + json_text.size());
  AppendOkRaw(out, id, member, json_text);
  return out;
}

void AppendOkRaw(std::string& out, uint64_t id, std::string_view member,
                 std::string_view json_text) {
  AppendId(out, id);
  out += ",\"ok\":true";
  if (!json_text.empty()) {
    out += ",\"";
    out += member;
    out += "\":";
    out += json_text;
  }
  out += '}';
}

std::string EncodeError(std::optional<uint64_t> id, const Status& status) {
  std::string out;
  AppendId(out, id);
  out += ",\"ok\":false,\"error\":{\"code\":\"";
  out += StatusCodeName(status.code());
  out += "\",\"message\":";
  out += Json(doc::Value(status.message()));
  out += "}}";
  return out;
}

}  // namespace skiff::server::internal
