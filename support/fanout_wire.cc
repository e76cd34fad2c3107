#include "support/fanout_wire.h"

#include <charconv>
#include <cstdio>

namespace skiff::bench {
namespace {

constexpr std::string_view kCrlf = "\r\n";

bool ToUnsigned(std::string_view digits, uint64_t* out) {
  if (digits.empty()) return false;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), *out);
  return ec == std::errc() && end == digits.data() + digits.size();
}

bool ToSigned(std::string_view digits, int64_t* out) {
  if (digits.empty()) return false;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), *out);
  return ec == std::errc() && end == digits.data() + digits.size();
}

// The line at `at` without its CRLF, and where the next one starts; false
// when the line is not complete yet.
bool Line(std::string_view in, size_t at, std::string_view* line, size_t* next) {
  const size_t end = in.find(kCrlf, at);
  if (end == std::string_view::npos) return false;
  *line = in.substr(at, end - at);
  *next = end + 2;
  return true;
}

}  // namespace

std::string JsonString(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
      out += escaped;
    } else {
      out += c;
    }
  }
  out += '"';
  return out;
}

bool ParseNumber(std::string_view json, std::string_view field, uint64_t* out) {
  const size_t at = json.find(field);
  if (at == std::string_view::npos) return false;
  const char* begin = json.data() + at + field.size();
  const auto [end, ec] = std::from_chars(begin, json.data() + json.size(), *out);
  return ec == std::errc() && end != begin;
}

bool ParseChange(std::string_view payload, FanoutDelivery* d) {
  constexpr std::string_view kKey = R"("key":")";
  constexpr std::string_view kValue = R"(,"value":)";
  constexpr std::string_view kVersion = R"(,"version":)";
  const size_t key_at = payload.find(kKey);
  if (key_at == std::string_view::npos) return false;
  const size_t key_begin = key_at + kKey.size();
  const size_t key_end = payload.find('"', key_begin);
  if (key_end == std::string_view::npos) return false;
  if (payload.substr(key_end + 1, kValue.size()) != kValue) return false;
  const size_t value_begin = key_end + 1 + kValue.size();
  size_t value_end = payload.size() - 1;  // the closing brace
  const size_t version_at = payload.rfind(kVersion);
  d->version = 0;
  if (version_at != std::string_view::npos && version_at > value_begin) {
    value_end = version_at;
    if (!ToUnsigned(payload.substr(version_at + kVersion.size(),
                                   payload.size() - 1 - version_at - kVersion.size()),
                    &d->version)) {
      return false;
    }
  }
  if (value_end <= value_begin || payload.back() != '}') return false;
  d->key = payload.substr(key_begin, key_end - key_begin);
  d->value = payload.substr(value_begin, value_end - value_begin);
  d->coalesced = payload.substr(0, key_at).find(R"("coalesced":true)") != std::string_view::npos;
  return true;
}

size_t ParseResp(std::string_view in, RespMessage* out) {
  if (in.empty()) return 0;
  std::string_view line;
  size_t next = 0;
  if (!Line(in, 1, &line, &next)) return 0;
  out->type = in[0];
  out->count = 0;
  switch (in[0]) {
    case '+':
    case '-':
    case ':':
      out->text = line;
      return next;
    case '*':
      break;
    default:
      return kMalformed;
  }
  int64_t count = 0;
  if (!ToSigned(line, &count) || count < 0 || count > int64_t(out->items.size())) {
    return kMalformed;
  }
  size_t at = next;
  for (int64_t k = 0; k < count; ++k) {
    if (at >= in.size()) return 0;
    const char type = in[at];
    if (!Line(in, at + 1, &line, &next)) return 0;
    if (type == ':') {
      out->items[out->count++] = line;
      at = next;
      continue;
    }
    int64_t size = 0;
    if (type != '$' || !ToSigned(line, &size) || size < 0) return kMalformed;
    if (in.size() < next + size_t(size) + 2) return 0;
    if (in.substr(next + size_t(size), 2) != kCrlf) return kMalformed;
    out->items[out->count++] = in.substr(next, size_t(size));
    at = next + size_t(size) + 2;
  }
  return at;
}

std::string RespCommand(std::initializer_list<std::string_view> args) {
  std::string out = "*" + std::to_string(args.size()) + "\r\n";
  for (std::string_view a : args) {
    out += "$" + std::to_string(a.size()) + "\r\n";
    out += a;
    out += kCrlf;
  }
  return out;
}

size_t ParseNats(std::string_view in, NatsMessage* out) {
  std::string_view line;
  size_t next = 0;
  if (!Line(in, 0, &line, &next)) return 0;
  if (line == "PING") {
    out->kind = NatsMessage::Kind::kPing;
  } else if (line == "PONG") {
    out->kind = NatsMessage::Kind::kPong;
  } else if (line == "+OK") {
    out->kind = NatsMessage::Kind::kOk;
  } else if (line.starts_with("-ERR")) {
    out->kind = NatsMessage::Kind::kErr;
    out->payload = line;
  } else if (line.starts_with("INFO ")) {
    out->kind = NatsMessage::Kind::kInfo;
  } else if (line.starts_with("MSG ")) {
    // MSG <subject> <sid> [reply-to] <#bytes>
    std::array<std::string_view, 4> words;
    size_t count = 0;
    for (size_t at = 4; at < line.size();) {
      const size_t space = line.find(' ', at);
      const size_t end = space == std::string_view::npos ? line.size() : space;
      if (end > at) {
        if (count == words.size()) return kMalformed;
        words[count++] = line.substr(at, end - at);
      }
      at = end + 1;
    }
    uint64_t size = 0;
    if (count < 3 || !ToUnsigned(words[count - 1], &size)) return kMalformed;
    if (in.size() < next + size + 2) return 0;
    if (in.substr(next + size, 2) != kCrlf) return kMalformed;
    out->kind = NatsMessage::Kind::kMsg;
    out->subject = words[0];
    out->payload = in.substr(next, size);
    return next + size + 2;
  } else {
    return kMalformed;
  }
  return next;
}

std::string NatsSubject(std::string_view key) {
  std::string s(key);
  for (char& c : s) {
    if (c == '/') c = '.';
  }
  return s;
}

std::string KeyOfNatsSubject(std::string_view subject) {
  std::string s(subject);
  for (char& c : s) {
    if (c == '.') c = '/';
  }
  return s;
}

}  // namespace skiff::bench
