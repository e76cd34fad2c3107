// The HTTP/1.1 side of a WebSocket (RFC 6455 section 4): the opening
// handshake for both ends, and the few plain HTTP answers a server gives on
// the same port (a health check, refusals).
//
// Only what a WebSocket handshake needs is parsed: the request line and the
// headers it names. Sizes are bounded by the caller. Pure functions;
// thread-safe.
#ifndef SKIFF_WS_HANDSHAKE_H_
#define SKIFF_WS_HANDSHAKE_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace skiff::ws {

// A request head, as views into the bytes it was parsed from.
struct HttpRequest {
  std::string_view method;
  std::string_view target;
  std::string_view version;  // "HTTP/1.1"
  std::string_view host;
  std::string_view upgrade;     // the Upgrade header
  std::string_view connection;  // the Connection header
  std::string_view key;         // Sec-WebSocket-Key
  std::string_view ws_version;  // Sec-WebSocket-Version
  size_t head_bytes = 0;        // through the blank line that ends the head
};

enum class HeadResult {
  kComplete,  // *out is filled
  kNeedMore,  // no blank line yet, and still under the size limit
  kTooLarge,  // no blank line within `max_head_bytes`
  kBad,       // not an HTTP/1.1 request head; *why says what
};

// Parses the request head at the front of `bytes`.
HeadResult ParseRequestHead(std::string_view bytes, size_t max_head_bytes, HttpRequest* out,
                            std::string* why);

// Empty when `request` is a valid WebSocket upgrade (GET, HTTP/1.1,
// Upgrade: websocket, Connection: upgrade, a 16-byte key, version 13);
// otherwise why not, in words for the refusal's body.
std::string UpgradeProblem(const HttpRequest& request);

// The Sec-WebSocket-Accept value for a client's key.
std::string AcceptKey(std::string_view client_key);

// The 101 response that completes a server's handshake.
std::string UpgradeResponse(std::string_view client_key);

// A complete plain HTTP response that closes the connection, with a text
// body. `extra_headers` are whole lines, each ending in \r\n.
std::string PlainResponse(int status, std::string_view reason, std::string_view body,
                          std::string_view extra_headers = {});

// Client side: a fresh random key, the GET request that opens ws://host/
// (`host` as it goes in the Host header, e.g. "127.0.0.1:7420"), and the
// check of the server's answer.
std::string NewClientKey();
std::string ClientRequest(std::string_view host, std::string_view key,
                          std::string_view target = "/");

enum class ResponseResult { kAccepted, kNeedMore, kRefused };
// Reads the response head at the front of `bytes`. kAccepted when it is a
// 101 with the right accept value (*head_bytes says where frames start);
// kRefused otherwise, with the status line (and body start) in *why.
ResponseResult ParseUpgradeResponse(std::string_view bytes, std::string_view client_key,
                                    size_t* head_bytes, std::string* why);

}  // namespace skiff::ws

#endif  // SKIFF_WS_HANDSHAKE_H_
