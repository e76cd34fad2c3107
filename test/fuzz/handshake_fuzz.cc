// Fuzz target for the HTTP side of the WebSocket handshake (src/ws/handshake.h),
// the first bytes a server reads from anyone who connects. Its promises: any
// bytes end in one of the four outcomes of ParseRequestHead, never a crash or
// a view outside the head; the outcome does not depend on how many bytes have
// arrived once the head is complete, nor on what follows it; a head still
// arriving is kNeedMore until the size limit, then kTooLarge; a request
// UpgradeProblem accepts gets a 101 that the client side accepts; a request
// the client side writes parses back to what it was built from; and the
// client's reading of any response never claims bytes it was not given.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/check.h"

#include "ws/handshake.h"

namespace {

using skiff::ws::HeadResult;
using skiff::ws::HttpRequest;
using skiff::ws::ResponseResult;

// Whether `part` is a view into `whole` (an empty view may point anywhere).
bool Inside(std::string_view part, std::string_view whole) {
  if (part.empty()) return true;
  return part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size();
}

bool SameRequest(const HttpRequest& a, const HttpRequest& b) {
  return a.method == b.method && a.target == b.target && a.version == b.version &&
         a.host == b.host && a.upgrade == b.upgrade && a.connection == b.connection &&
         a.key == b.key && a.ws_version == b.ws_version && a.head_bytes == b.head_bytes;
}

void CheckRequestHead(std::string_view bytes, size_t max_head_bytes) {
  HttpRequest request;
  std::string why;
  const HeadResult result = ParseRequestHead(bytes, max_head_bytes, &request, &why);
  switch (result) {
    case HeadResult::kNeedMore:
      SKIFF_CHECK(bytes.size() < max_head_bytes);
      SKIFF_CHECK(bytes.find("\r\n\r\n") == std::string_view::npos);
      return;
    case HeadResult::kTooLarge:
      SKIFF_CHECK(bytes.size() >= max_head_bytes);
      SKIFF_CHECK(bytes.substr(0, max_head_bytes).find("\r\n\r\n") == std::string_view::npos);
      return;
    case HeadResult::kBad:
      SKIFF_CHECK(!why.empty());
      break;
    case HeadResult::kComplete:
      break;
  }
  // A head was found (complete or bad): it ends at the first blank line,
  // within the limit, and nothing after it changes the outcome.
  const size_t head = bytes.substr(0, max_head_bytes).find("\r\n\r\n") + 4;
  if (result == HeadResult::kComplete) {
    SKIFF_CHECK(request.head_bytes == head);
    const std::string_view head_text = bytes.substr(0, head);
    for (std::string_view field :
         {request.method, request.target, request.version, request.host, request.upgrade,
          request.connection, request.key, request.ws_version}) {
      SKIFF_CHECK(Inside(field, head_text));
      SKIFF_CHECK(field.find("\r\n") == std::string_view::npos);
    }
    SKIFF_CHECK(request.version.substr(0, 5) == "HTTP/");
  }
  HttpRequest again;
  std::string why_again;
  SKIFF_CHECK(ParseRequestHead(bytes.substr(0, head), max_head_bytes, &again, &why_again) ==
              result);
  SKIFF_CHECK(why_again == why);
  if (result == HeadResult::kComplete) SKIFF_CHECK(SameRequest(again, request));
  // One byte short of the blank line, the head is still arriving.
  HttpRequest partial;
  SKIFF_CHECK(ParseRequestHead(bytes.substr(0, head - 1), max_head_bytes, &partial, &why_again) ==
              HeadResult::kNeedMore);

  if (result != HeadResult::kComplete) return;
  const std::string problem = skiff::ws::UpgradeProblem(request);
  if (!problem.empty()) return;
  SKIFF_CHECK(request.method == "GET" && request.version == "HTTP/1.1");
  SKIFF_CHECK(request.key.size() == 24 && request.ws_version == "13");
  const std::string response = skiff::ws::UpgradeResponse(request.key);
  size_t response_head = 0;
  std::string refused;
  SKIFF_CHECK(skiff::ws::ParseUpgradeResponse(response, request.key, &response_head, &refused) ==
              ResponseResult::kAccepted);
  SKIFF_CHECK(response_head == response.size());
}

// The client's request, with a host and target taken from the input, must
// parse back to exactly those and be a valid upgrade.
void CheckClientRequest(std::string_view bytes) {
  std::string host, target = "/";
  for (char c : bytes.substr(0, 40)) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == ':';
    if (plain) host.push_back(c);
    if (plain || c == '/' || c == '?' || c == '=' || c == '%') target.push_back(c);
  }
  if (host.empty()) host = "127.0.0.1:7420";
  const std::string key = skiff::ws::NewClientKey();
  const std::string text = skiff::ws::ClientRequest(host, key, target);
  HttpRequest request;
  std::string why;
  SKIFF_CHECK(ParseRequestHead(text, text.size() + 1, &request, &why) == HeadResult::kComplete);
  SKIFF_CHECK(request.head_bytes == text.size());
  SKIFF_CHECK(request.host == host && request.target == target && request.key == key);
  SKIFF_CHECK(skiff::ws::UpgradeProblem(request).empty());
}

// The client reading a server's answer: any bytes, a fixed key.
void CheckUpgradeResponse(std::string_view bytes) {
  constexpr std::string_view kKey = "dGhlIHNhbXBsZSBub25jZQ==";  // RFC 6455's example
  size_t head = 0;
  std::string why;
  switch (skiff::ws::ParseUpgradeResponse(bytes, kKey, &head, &why)) {
    case ResponseResult::kNeedMore:
      SKIFF_CHECK(bytes.find("\r\n\r\n") == std::string_view::npos);
      break;
    case ResponseResult::kAccepted:
      SKIFF_CHECK(head >= 4 && head <= bytes.size());
      SKIFF_CHECK(bytes.substr(0, 13) == "HTTP/1.1 101 ");
      break;
    case ResponseResult::kRefused:
      SKIFF_CHECK(head >= 4 && head <= bytes.size());
      SKIFF_CHECK(!why.empty() || bytes.substr(0, 2) == "\r\n");
      break;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  CheckRequestHead(bytes, 8192);
  // A small limit reaches kTooLarge with short inputs.
  CheckRequestHead(bytes, 64);
  CheckClientRequest(bytes);
  CheckUpgradeResponse(bytes);
  return 0;
}
