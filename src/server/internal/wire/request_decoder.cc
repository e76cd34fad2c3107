#include "server/internal/wire/request_decoder.h"

#include <string>
#include <utility>

#include "doc/names.h"
#include "server/internal/wire/json_text.h"
#include "server/internal/wire/request_fields.h"
#include "server/internal/wire/request_scanner.h"
#include "store/store.h"

namespace skiff::server::internal {
namespace {

Status Missing(std::string_view label) {
  return BadRequest("missing field '" + std::string(label) + "'");
}

Status Wrong(std::string_view label, std::string_view rule) {
  return BadRequest("field '" + std::string(label) + "' " + std::string(rule));
}

// A check of the value's contents (a table name, a key), its message
// prefixed with the field's name.
Status Prefix(std::string_view label, Status s) {
  if (s.ok()) return s;
  return Status(s.code(), "field '" + std::string(label) + "': " + s.message());
}

// True when a field given as null is taken as absent: an optional one
// (except a path, which must be an array), and a required unsigned integer,
// which is then missing.
bool NullIsAbsent(const FieldSpec& f) {
  if (f.presence == Presence::kOptional) return f.type != FieldType::kPath;
  return f.type == FieldType::kUnsigned;
}

Result<std::string> String(const doc::Value& v, std::string_view label) {
  if (!v.is_string()) return Wrong(label, "must be a string");
  return v.get_ref<const std::string&>();
}

Result<uint64_t> Unsigned(const doc::Value& v, std::string_view label) {
  if (!v.is_number_unsigned()) return Wrong(label, "must be an unsigned integer");
  return v.get<uint64_t>();
}

Status DecodePath(const doc::Value& v, Request& r) {
  constexpr std::string_view kRule = "must be an array of strings";
  if (!v.is_array()) return Wrong("path", kRule);
  for (const doc::Value& part : v) {
    if (!part.is_string()) return Wrong("path", kRule);
    r.path.push_back(part.get<std::string>());
  }
  return Status::Ok();
}

Status DecodeScanAfter(const doc::Value& v, Request& r) {
  if (!v.is_string()) return Wrong("after", "must be a string or null");
  r.after = v.get_ref<const std::string&>();
  if (r.after.empty()) return Status::Ok();  // from the first key
  return Prefix("after", doc::ValidateKey(r.after));
}

Status DecodeSyncAfter(const doc::Value& v, Request& r) {
  constexpr std::string_view kRule = "must be null or [group, table, key] (three strings)";
  if (!v.is_array() || v.size() != 3) return Wrong("after", kRule);
  for (const doc::Value& part : v) {
    if (!part.is_string()) return Wrong("after", kRule);
  }
  r.sync_after.group = v[0].get<std::string>();
  r.sync_after.table = v[1].get<std::string>();
  r.sync_after.key = v[2].get<std::string>();
  if (r.sync_after.group.empty()) return Wrong("after", "must name a group");
  return Status::Ok();
}

Status DecodeBox(const doc::Value& v, Request& r) {
  if (!v.is_array() || v.size() != 2 || !v[0].is_number() || !v[1].is_number()) {
    return Wrong("box_m", "must be [width, height], two numbers of metres");
  }
  r.geo.box_w_m = v[0].get<double>();
  r.geo.box_h_m = v[1].get<double>();
  return Status::Ok();
}

Status DecodeChanges(doc::Value& v, Request& r);

// An absent (or null-as-absent) optional field: its default.
void Default(const FieldSpec& f, Request& r) {
  switch (f.type) {
    case FieldType::kScanLimit:
      r.limit = store::kDefaultScanLimit;
      break;
    case FieldType::kSyncLimit:
      r.limit = kDefaultSyncPage;
      break;
    default:
      if (f.slot == Slot::kTimeoutMs) r.timeout_ms = kDefaultWaitMs;
      break;  // the Request's own initial value
  }
}

// A present field of the request (or of a push change, `change` non-null),
// checked for its type and stored in its slot.
Status Put(const FieldSpec& f, std::string_view label, doc::Value& v, Request& r,
           sync::PushChange* change) {
  switch (f.type) {
    case FieldType::kString:
    case FieldType::kTableName:
    case FieldType::kKey: {
      SKIFF_ASSIGN_OR_RETURN(std::string s, String(v, label));
      if (f.type == FieldType::kTableName) {
        SKIFF_RETURN_IF_ERROR(Prefix(label, doc::ValidateTableName(s)));
      } else if (f.type == FieldType::kKey) {
        SKIFF_RETURN_IF_ERROR(Prefix(label, doc::ValidateKey(s)));
      }
      switch (f.slot) {
        case Slot::kUser:
          r.user = std::move(s);
          break;
        case Slot::kSecret:
          r.secret = std::move(s);
          break;
        case Slot::kToken:
          r.token = std::move(s);
          break;
        case Slot::kDevice:
          r.push.device = std::move(s);
          break;
        case Slot::kTable:
          (change ? change->table : r.table) = std::move(s);
          break;
        case Slot::kKey:
          (change ? change->key : r.key) = std::move(s);
          break;
        case Slot::kGroup:
          change->group = std::move(s);
          break;
        case Slot::kPrefix:
          r.prefix = std::move(s);
          break;
        default:
          return Internal("no string slot for field '" + std::string(label) + "'");
      }
      return Status::Ok();
    }
    case FieldType::kJson:
      if (change != nullptr) {
        // null deletes the row; any other JSON is its new value.
        if (!v.is_null()) change->value = v.dump();
      } else {
        r.value = std::move(v);
      }
      return Status::Ok();
    case FieldType::kNumber: {
      if (!v.is_number()) return Wrong(label, "must be a number");
      if (f.slot == Slot::kValue) {
        r.value = std::move(v);
      } else if (f.slot == Slot::kLat) {
        r.geo.lat = v.get<double>();
      } else if (f.slot == Slot::kLon) {
        r.geo.lon = v.get<double>();
      } else {
        r.geo.radius_m = v.get<double>();
      }
      return Status::Ok();
    }
    case FieldType::kUnsigned: {
      SKIFF_ASSIGN_OR_RETURN(uint64_t n, Unsigned(v, label));
      if (change != nullptr) {
        change->seq = n;
      } else if (f.slot == Slot::kSince) {
        r.since = n;
      } else if (f.slot == Slot::kWatch) {
        r.watch = n;
      } else {
        r.timeout_ms = n;
      }
      return Status::Ok();
    }
    case FieldType::kBool:
      if (!v.is_boolean()) return Wrong(label, "must be true or false");
      (f.slot == Slot::kValues    ? r.values
       : f.slot == Slot::kInitial ? r.initial
                                  : r.columns) = v.get<bool>();
      return Status::Ok();
    case FieldType::kPath:
      return DecodePath(v, r);
    case FieldType::kScanLimit:
      if (!v.is_number_integer() || v.get<int64_t>() < 1 ||
          v.get<uint64_t>() > store::kMaxScanLimit) {
        return Wrong(label, "must be an integer from 1 to " + std::to_string(store::kMaxScanLimit));
      }
      r.limit = v.get<size_t>();
      return Status::Ok();
    case FieldType::kNearLimit:
      if (!v.is_number_unsigned() || v.get<uint64_t>() < 1 || v.get<uint64_t>() > geo::kMaxLimit) {
        return Wrong(label, "must be an integer from 1 to " + std::to_string(geo::kMaxLimit));
      }
      r.geo.limit = v.get<size_t>();
      return Status::Ok();
    case FieldType::kSyncLimit: {
      SKIFF_ASSIGN_OR_RETURN(uint64_t n, Unsigned(v, label));
      // The engine bounds it from above with its own page limit.
      if (n == 0) return Wrong(label, "must be at least 1");
      r.limit = static_cast<size_t>(n);
      return Status::Ok();
    }
    case FieldType::kScanAfter:
      return DecodeScanAfter(v, r);
    case FieldType::kSyncAfter:
      return DecodeSyncAfter(v, r);
    case FieldType::kBox:
      return DecodeBox(v, r);
    case FieldType::kChanges:
      return DecodeChanges(v, r);
  }
  return Internal("unhandled field type");
}

// Walks `fields` over the members of `obj` in the table's order; the first
// field that fails names the error. `prefix` labels the fields of a nested
// object ("changes[3].").
Status DecodeFields(std::span<const FieldSpec> fields, doc::Value& obj, std::string_view prefix,
                    Request& r, sync::PushChange* change) {
  for (const FieldSpec& f : fields) {
    const std::string label = std::string(prefix) + f.name;
    auto it = obj.find(f.name);
    if (it == obj.end() || (it->is_null() && NullIsAbsent(f))) {
      if (f.presence == Presence::kRequired) return Missing(label);
      Default(f, r);
      continue;
    }
    SKIFF_RETURN_IF_ERROR(Put(f, label, *it, r, change));
  }
  return Status::Ok();
}

Status DecodeChanges(doc::Value& v, Request& r) {
  if (!v.is_array()) return Wrong("changes", "must be an array");
  r.push.changes.reserve(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    doc::Value& c = v[i];
    const std::string at = "changes[" + std::to_string(i) + "]";
    if (!c.is_object()) return Wrong(at, "must be an object");
    sync::PushChange change;
    SKIFF_RETURN_IF_ERROR(DecodeFields(PushChangeFields(), c, at + ".", r, &change));
    r.push.changes.push_back(std::move(change));
  }
  return Status::Ok();
}

}  // namespace

Result<Request> DecodeRequest(std::string_view text, const doc::Limits& limits,
                              std::optional<uint64_t>* id) {
  id->reset();
  SKIFF_ASSIGN_OR_RETURN(doc::Value obj, doc::Parse(text, limits));
  if (!obj.is_object()) return BadRequest("a request must be a JSON object");

  Request r;
  auto id_field = obj.find("id");
  if (id_field == obj.end()) return Missing("id");
  if (!id_field->is_number_unsigned()) return Wrong("id", "must be an unsigned integer");
  r.id = id_field->get<uint64_t>();
  *id = r.id;

  auto op = obj.find("op");
  if (op == obj.end()) return Missing("op");
  if (!op->is_string()) return Wrong("op", "must be a string");
  const OpSpec* spec = FindOp(op->get_ref<const std::string&>());
  if (spec == nullptr)
    return BadRequest("unknown op " + JsonString(op->get_ref<const std::string&>()));
  r.op = spec->op;
  SKIFF_RETURN_IF_ERROR(DecodeFields(spec->fields, obj, "", r, nullptr));
  // Each path element can add a level of nesting to the stored document.
  if (r.path.size() >= limits.max_depth) {
    return TooLarge("field 'path' has " + std::to_string(r.path.size()) +
                    " elements; documents nest at most " + std::to_string(limits.max_depth - 1) +
                    " levels");
  }
  return r;
}

Status DecodeFrame(std::string_view text, const doc::Limits& limits, Request* r,
                   std::optional<uint64_t>* id) {
  if (ScanRequest(text, limits, r)) {
    *id = r->id;
    return Status::Ok();
  }
  Result<Request> decoded = DecodeRequest(text, limits, id);
  if (!decoded.ok()) return decoded.status();
  *r = std::move(*decoded);
  return Status::Ok();
}

std::string SetDocumentText(const Request& r) {
  return r.raw_value.empty() ? doc::Dump(r.value) : CompactJson(r.raw_value);
}

}  // namespace skiff::server::internal
