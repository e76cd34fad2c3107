#include "server/internal/wire/replies.h"

#include <charconv>
#include <variant>

#include "server/internal/wire/json_text.h"
#include "server/internal/wire/reply_writer.h"

namespace skiff::server::internal {
namespace {

std::string Json(const doc::Value& v) {
  // Replace rather than throw on invalid UTF-8: parsed input is already
  // valid, this only guards messages that quote raw bytes.
  return v.dump(-1, ' ', false, doc::Value::error_handler_t::replace);
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

// A number as JSON text: integers without the serializer's machinery.
void AppendNumber(std::string& out, const doc::Value& n) {
  char buf[24];
  std::to_chars_result end{buf, std::errc()};
  if (n.is_number_unsigned()) {
    end = std::to_chars(buf, buf + sizeof buf, n.get<uint64_t>());
  } else if (n.is_number_integer()) {
    end = std::to_chars(buf, buf + sizeof buf, n.get<int64_t>());
  } else {
    out += n.dump();
    return;
  }
  out.append(buf, end.ptr);
}

}  // namespace

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

void AppendOk(std::string& out, uint64_t id) { AppendOkRaw(out, id, {}, {}); }

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

std::string EncodeRateLimited(std::optional<uint64_t> id, const std::string& message,
                              uint64_t retry_after_ms) {
  std::string out = EncodeError(id, Status(StatusCode::kRateLimited, message));
  out.resize(out.size() - 2);  // reopen the error object
  out += ",\"retry_after_ms\":";
  out += std::to_string(retry_after_ms);
  out += "}}";
  return out;
}

void AppendEchoReply(std::string& out, const Request& r) {
  ReplyWriter w(out, r.id);
  if (r.raw_value.empty()) {
    w.Open("data").out() += r.value.dump();
  } else {
    w.Raw("data", r.raw_value);
  }
  w.Finish();
}

void AppendReadReply(std::string& out, uint64_t id, bool with_value, const CachedDocument& d) {
  ReplyWriter w(out, id);
  w.Bool("found", d.exists());
  if (with_value && d.exists()) AppendDocument(w.Open("value").out(), d);
  w.Finish();
}

void AppendDeleteReply(std::string& out, uint64_t id, std::optional<bool> found) {
  ReplyWriter w(out, id);
  if (found) w.Bool("found", *found);
  w.Finish();
}

void AppendAddReply(std::string& out, uint64_t id, const doc::Value* sum) {
  ReplyWriter w(out, id);
  if (sum != nullptr) AppendNumber(w.Open("value").out(), *sum);
  w.Finish();
}

std::string EncodeAllReply(uint64_t id, const store::ScanPage& page) {
  std::string reply;
  ReplyWriter w(reply, id);
  std::string& out = w.Open("items").out();
  out += '[';
  for (size_t i = 0; i < page.items.size(); ++i) {
    const store::KeyValue& item = page.items[i];
    if (i > 0) out += ',';
    out += "{\"key\":";
    AppendJsonString(out, item.key);
    out += ",\"value\":";
    out += item.value;
    out += '}';
  }
  out += ']';
  w.Open("next");
  if (page.next) {
    AppendJsonString(out, *page.next);
  } else {
    out += "null";
  }
  return std::move(w.Finish());
}

void AppendDocument(std::string& out, const CachedDocument& d) {
  if (const auto* text = std::get_if<TextForm>(&d.form)) {
    out += text->json;
  } else if (const auto* tree = std::get_if<TreeForm>(&d.form)) {
    out += doc::Dump(tree->tree);
  }
}

}  // namespace skiff::server::internal
