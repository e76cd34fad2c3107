#include "store/internal/pg_url.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <string_view>
#include <vector>

namespace skiff::store::internal {
namespace {

Status ParseMillis(std::string_view name, std::string_view text, std::chrono::milliseconds* out) {
  int64_t ms = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), ms);
  if (ec != std::errc() || end != text.data() + text.size() || ms <= 0 || ms > 86'400'000) {
    return BadRequest("store URL parameter " + std::string(name) +
                      " must be a number of milliseconds from 1 to 86400000, not '" +
                      std::string(text) + "'");
  }
  *out = std::chrono::milliseconds(ms);
  return Status::Ok();
}

}  // namespace

Result<PgUrl> ParsePgUrl(const std::string& url, const PostgresOptions& defaults) {
  PgUrl out;
  out.options = defaults;
  const size_t q = url.find('?');
  std::string base = url.substr(0, q);
  std::vector<std::string> kept;
  bool has_connect_timeout = false;
  if (q != std::string::npos) {
    std::string_view query = std::string_view(url).substr(q + 1);
    while (!query.empty()) {
      const size_t amp = query.find('&');
      const std::string_view item = query.substr(0, amp);
      query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
      if (item.empty()) continue;
      const size_t eq = item.find('=');
      const std::string_view name = item.substr(0, eq);
      const std::string_view value =
          eq == std::string_view::npos ? std::string_view() : item.substr(eq + 1);
      if (name == "statement_timeout_ms") {
        SKIFF_RETURN_IF_ERROR(ParseMillis(name, value, &out.options.statement_timeout));
      } else if (name == "lock_timeout_ms") {
        SKIFF_RETURN_IF_ERROR(ParseMillis(name, value, &out.options.lock_timeout));
      } else if (name == "call_timeout_ms") {
        SKIFF_RETURN_IF_ERROR(ParseMillis(name, value, &out.options.call_timeout));
      } else {
        if (name == "connect_timeout") has_connect_timeout = true;
        kept.emplace_back(item);
      }
    }
  }
  if (!has_connect_timeout) kept.emplace_back("connect_timeout=5");
  out.libpq_url = base;
  for (size_t i = 0; i < kept.size(); ++i) out.libpq_url += (i == 0 ? "?" : "&") + kept[i];
  return out;
}

std::string WithHostLast(const std::string& url, const std::string& host, const std::string& port) {
  const size_t scheme = url.find("://");
  if (scheme == std::string::npos || host.empty()) return url;
  const size_t start = scheme + 3;
  size_t end = url.find_first_of("/?", start);
  if (end == std::string::npos) end = url.size();
  const size_t at = url.rfind('@', end);
  const size_t hosts = at != std::string::npos && at >= start ? at + 1 : start;
  std::vector<std::string> list;
  size_t from = hosts;
  for (;;) {
    const size_t comma = url.find(',', from);
    if (comma == std::string::npos || comma > end) {
      list.push_back(url.substr(from, end - from));
      break;
    }
    list.push_back(url.substr(from, comma - from));
    from = comma + 1;
  }
  if (list.size() < 2) return url;
  const std::string with_port = host + ":" + port;
  const std::string bracketed = "[" + host + "]:" + port;
  auto it = std::find_if(list.begin(), list.end(), [&](const std::string& entry) {
    return entry == with_port || entry == bracketed || entry == host || entry == "[" + host + "]";
  });
  if (it == list.end() || it + 1 == list.end()) return url;
  std::rotate(it, it + 1, list.end());
  std::string joined;
  for (size_t i = 0; i < list.size(); ++i) joined += (i == 0 ? "" : ",") + list[i];
  return url.substr(0, hosts) + joined + url.substr(end);
}

}  // namespace skiff::store::internal
