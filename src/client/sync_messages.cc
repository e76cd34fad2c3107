#include "client/sync_messages.h"

#include <utility>

#include "client/internal/bootstrap_page.h"

namespace skiff::client {
namespace {

// Appends `s` as a JSON string, the bytes nlohmann's dump would write (a
// request's size is counted on the wire, so it stays what it was when
// requests were trees). Names and keys are plain ASCII nearly always and
// are copied as they are; anything else goes through the tree's printer.
void AppendString(std::string& out, std::string_view s) {
  bool plain = true;
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    plain = plain && u >= 0x20 && u < 0x80 && c != '"' && c != '\\';
  }
  if (plain) {
    out += '"';
    out += s;
    out += '"';
  } else {
    out += doc::Dump(doc::Value(std::string(s)));
  }
}

void AppendUnsigned(std::string& out, uint64_t v) {
  char buf[20];
  char* p = buf + sizeof buf;
  do {
    *--p = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  out.append(p, static_cast<size_t>(buf + sizeof buf - p));
}

// `{"id":N,"op":"OP"` or `{"op":"OP"`; the caller adds the members and '}'.
std::string Head(uint64_t id, std::string_view op, size_t reserve) {
  std::string out;
  out.reserve(reserve + 32);
  out += '{';
  if (id != 0) {
    out += "\"id\":";
    AppendUnsigned(out, id);
    out += ',';
  }
  out += "\"op\":\"";
  out += op;
  out += '"';
  return out;
}

Result<const doc::Value*> Member(const doc::Value& obj, const char* name) {
  if (!obj.is_object()) return Internal("reply is not an object");
  auto it = obj.find(name);
  if (it == obj.end()) return Internal(std::string("reply lacks '") + name + "'");
  return &*it;
}

Result<uint64_t> Unsigned(const doc::Value& obj, const char* name) {
  SKIFF_ASSIGN_OR_RETURN(const doc::Value* v, Member(obj, name));
  if (!v->is_number_unsigned()) return Internal(std::string("'") + name + "' is not a number");
  return v->get<uint64_t>();
}

Result<bool> Boolean(const doc::Value& obj, const char* name) {
  SKIFF_ASSIGN_OR_RETURN(const doc::Value* v, Member(obj, name));
  if (!v->is_boolean()) return Internal(std::string("'") + name + "' is not a boolean");
  return v->get<bool>();
}

Result<RowName> NameOf(const doc::Value& row) {
  if (!row.is_object()) return Internal("malformed row in reply");
  auto g = row.find("group"), t = row.find("table"), k = row.find("key");
  if (g == row.end() || t == row.end() || k == row.end() || !g->is_string() || !t->is_string() ||
      !k->is_string()) {
    return Internal("malformed row in reply");
  }
  return RowName{g->get<std::string>(), t->get<std::string>(), k->get<std::string>()};
}

}  // namespace

std::string EncodeRequest(const PushRequest& request, uint64_t id) {
  size_t bytes = 64 + request.device.size();
  for (const SyncChange& c : request.changes) {
    bytes += 80 + c.name.group.size() + c.name.table.size() + c.name.key.size() +
             (c.value ? c.value->size() : 4);
  }
  std::string out = Head(id, "push", bytes);
  out += ",\"device\":";
  AppendString(out, request.device);
  out += ",\"changes\":[";
  bool first = true;
  for (const SyncChange& c : request.changes) {
    out += first ? "{\"seq\":" : ",{\"seq\":";
    first = false;
    AppendUnsigned(out, c.seq);
    out += ",\"group\":";
    AppendString(out, c.name.group);
    out += ",\"table\":";
    AppendString(out, c.name.table);
    out += ",\"key\":";
    AppendString(out, c.name.key);
    out += ",\"value\":";
    out += c.value ? std::string_view(*c.value) : std::string_view("null");
    out += '}';
  }
  out += "]}";
  return out;
}

std::string EncodeRequest(const PullRequest& request, uint64_t id) {
  std::string out = Head(id, "pull", 32);
  out += ",\"since\":";
  AppendUnsigned(out, request.since);
  if (request.limit > 0) {
    out += ",\"limit\":";
    AppendUnsigned(out, request.limit);
  }
  out += '}';
  return out;
}

std::string EncodeRequest(const BootstrapRequest& request, uint64_t id) {
  std::string out = Head(id, "bootstrap", 64);
  if (request.after) {
    out += ",\"after\":[";
    AppendString(out, request.after->group);
    out += ',';
    AppendString(out, request.after->table);
    out += ',';
    AppendString(out, request.after->key);
    out += ']';
  }
  if (request.limit > 0) {
    out += ",\"limit\":";
    AppendUnsigned(out, request.limit);
  }
  out += '}';
  return out;
}

std::string EncodeRequest(const WaitRequest& request, uint64_t id) {
  std::string out = Head(id, "wait", 48);
  out += ",\"since\":";
  AppendUnsigned(out, request.since);
  if (request.timeout) {
    out += ",\"timeout_ms\":";
    AppendUnsigned(out, static_cast<uint64_t>(request.timeout->count()));
  }
  out += '}';
  return out;
}

Result<PushReply> DecodePushReply(const doc::Value& reply) {
  PushReply r;
  SKIFF_ASSIGN_OR_RETURN(r.applied, Unsigned(reply, "applied"));
  SKIFF_ASSIGN_OR_RETURN(r.last_seq, Unsigned(reply, "last_seq"));
  SKIFF_ASSIGN_OR_RETURN(r.cursor, Unsigned(reply, "cursor"));
  return r;
}

Result<PullReply> DecodePullReply(const doc::Value& reply) {
  PullReply r;
  SKIFF_ASSIGN_OR_RETURN(const doc::Value* changes, Member(reply, "changes"));
  if (!changes->is_array()) return Internal("'changes' is not an array");
  SKIFF_ASSIGN_OR_RETURN(r.cursor, Unsigned(reply, "cursor"));
  r.more = reply.value("more", false);
  r.changes.reserve(changes->size());
  for (const doc::Value& c : *changes) {
    SKIFF_ASSIGN_OR_RETURN(RowName name, NameOf(c));
    auto value = c.find("value");
    std::optional<std::string> text;
    if (value != c.end() && !value->is_null()) text = value->dump();
    r.changes.push_back({std::move(name), std::move(text)});
  }
  return r;
}

Result<WaitReply> DecodeWaitReply(const doc::Value& reply) {
  WaitReply r;
  SKIFF_ASSIGN_OR_RETURN(r.changed, Boolean(reply, "changed"));
  SKIFF_ASSIGN_OR_RETURN(r.cursor, Unsigned(reply, "cursor"));
  return r;
}

Result<BootstrapPage> DecodeBootstrapReply(std::string_view reply, const OnNextPage& on_next) {
  return internal::ReadBootstrapPage(reply, on_next);
}

}  // namespace skiff::client
