#include "ws/handshake.h"

#include <cstdint>
#include <random>

// SHA-1 and base64 from websocketpp's headers (header-only, already a
// dependency of the client SDK): the handshake needs nothing else of it.
#include <websocketpp/base64/base64.hpp>
#include <websocketpp/sha1/sha1.hpp>

namespace skiff::ws {
namespace {

constexpr std::string_view kGuid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";  // RFC 6455 1.3

char Lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool EqualsNoCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (Lower(a[i]) != Lower(b[i])) return false;
  }
  return true;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// True when the comma-separated list `value` holds `token` (any case).
bool HasToken(std::string_view value, std::string_view token) {
  while (!value.empty()) {
    size_t comma = value.find(',');
    if (EqualsNoCase(Trim(value.substr(0, comma)), token)) return true;
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return false;
}

bool IsBase64Char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
         c == '/';
}

// A key is 16 bytes in base64: 22 characters and "==".
bool IsValidKey(std::string_view key) {
  if (key.size() != 24 || key.substr(22) != "==") return false;
  for (size_t i = 0; i < 22; ++i) {
    if (!IsBase64Char(key[i])) return false;
  }
  return true;
}

// Splits "line\r\n" off the front of `rest`.
bool NextLine(std::string_view& rest, std::string_view* line) {
  size_t end = rest.find("\r\n");
  if (end == std::string_view::npos) return false;
  *line = rest.substr(0, end);
  rest.remove_prefix(end + 2);
  return true;
}

}  // namespace

HeadResult ParseRequestHead(std::string_view bytes, size_t max_head_bytes, HttpRequest* out,
                            std::string* why) {
  const size_t end = bytes.substr(0, max_head_bytes).find("\r\n\r\n");
  if (end == std::string_view::npos) {
    return bytes.size() >= max_head_bytes ? HeadResult::kTooLarge : HeadResult::kNeedMore;
  }
  *out = HttpRequest();
  out->head_bytes = end + 4;
  std::string_view rest = bytes.substr(0, end + 2);
  std::string_view line;
  NextLine(rest, &line);
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
    *why = "the request line is not METHOD TARGET VERSION";
    return HeadResult::kBad;
  }
  out->method = line.substr(0, sp1);
  out->target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  out->version = line.substr(sp2 + 1);
  if (out->version.substr(0, 5) != "HTTP/") {
    *why = "not an HTTP request";
    return HeadResult::kBad;
  }
  while (NextLine(rest, &line)) {
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) {
      *why = "a header line has no name";
      return HeadResult::kBad;
    }
    const std::string_view name = line.substr(0, colon);
    const std::string_view value = Trim(line.substr(colon + 1));
    std::string_view* slot = nullptr;
    if (EqualsNoCase(name, "host")) {
      slot = &out->host;
    } else if (EqualsNoCase(name, "upgrade")) {
      slot = &out->upgrade;
    } else if (EqualsNoCase(name, "connection")) {
      slot = &out->connection;
    } else if (EqualsNoCase(name, "sec-websocket-key")) {
      slot = &out->key;
    } else if (EqualsNoCase(name, "sec-websocket-version")) {
      slot = &out->ws_version;
    }
    if (slot && slot->empty()) *slot = value;  // the first one counts
  }
  return HeadResult::kComplete;
}

std::string UpgradeProblem(const HttpRequest& request) {
  if (request.method != "GET") return "a WebSocket opens with GET";
  if (request.version != "HTTP/1.1") return "a WebSocket opens over HTTP/1.1";
  if (!HasToken(request.upgrade, "websocket")) {
    return "this is a WebSocket endpoint: send Upgrade: websocket";
  }
  if (!HasToken(request.connection, "upgrade")) return "Connection: Upgrade is missing";
  if (request.ws_version != "13") return "only Sec-WebSocket-Version 13 is spoken";
  if (!IsValidKey(request.key)) return "Sec-WebSocket-Key must be 16 bytes in base64";
  return "";
}

std::string AcceptKey(std::string_view client_key) {
  std::string input(client_key);
  input.append(kGuid);
  unsigned char digest[20];
  websocketpp::sha1::calc(input.data(), input.size(), digest);
  return websocketpp::base64_encode(digest, sizeof digest);
}

std::string UpgradeResponse(std::string_view client_key) {
  std::string r =
      "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
      "Sec-WebSocket-Accept: ";
  r += AcceptKey(client_key);
  r += "\r\n\r\n";
  return r;
}

std::string PlainResponse(int status, std::string_view reason, std::string_view body,
                          std::string_view extra_headers) {
  std::string r = "HTTP/1.1 " + std::to_string(status) + " ";
  r += reason;
  r += "\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ";
  r += std::to_string(body.size());
  r += "\r\nConnection: close\r\n";
  r += extra_headers;
  r += "\r\n";
  r += body;
  return r;
}

std::string NewClientKey() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  unsigned char bytes[16];
  for (size_t i = 0; i < sizeof bytes; i += 8) {
    const uint64_t r = rng();
    for (size_t k = 0; k < 8; ++k) bytes[i + k] = static_cast<unsigned char>(r >> (8 * k));
  }
  return websocketpp::base64_encode(bytes, sizeof bytes);
}

std::string ClientRequest(std::string_view host, std::string_view key, std::string_view target) {
  std::string r = "GET ";
  r += target;
  r += " HTTP/1.1\r\nHost: ";
  r += host;
  r += "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ";
  r += key;
  r += "\r\nSec-WebSocket-Version: 13\r\n\r\n";
  return r;
}

ResponseResult ParseUpgradeResponse(std::string_view bytes, std::string_view client_key,
                                    size_t* head_bytes, std::string* why) {
  const size_t end = bytes.find("\r\n\r\n");
  if (end == std::string_view::npos) return ResponseResult::kNeedMore;
  *head_bytes = end + 4;
  std::string_view rest = bytes.substr(0, end + 2);
  std::string_view status_line;
  NextLine(rest, &status_line);
  if (status_line.substr(0, 13) != "HTTP/1.1 101 ") {
    *why = std::string(status_line);
    const std::string_view body = bytes.substr(end + 4, 200);
    if (!body.empty()) *why += ": " + std::string(body);
    return ResponseResult::kRefused;
  }
  const std::string expected = AcceptKey(client_key);
  std::string_view line;
  while (NextLine(rest, &line)) {
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    if (EqualsNoCase(line.substr(0, colon), "sec-websocket-accept")) {
      if (Trim(line.substr(colon + 1)) == expected) return ResponseResult::kAccepted;
      *why = "the server's Sec-WebSocket-Accept does not match the key";
      return ResponseResult::kRefused;
    }
  }
  *why = "the server's 101 has no Sec-WebSocket-Accept";
  return ResponseResult::kRefused;
}

}  // namespace skiff::ws
