#include "server/internal/wire/near_reply.h"

#include <algorithm>
#include <optional>

#include <nlohmann/json.hpp>

#include "doc/json_skip.h"
#include "geo/distance_text.h"
#include "server/internal/wire/json_text.h"
#include "server/internal/wire/reply_writer.h"

namespace skiff::server::internal {
namespace {

using geo::GeoHit;
using geo::kDistanceChars;
using geo::PutDistance;

// Appends a near item's key and distance, `{"key":K,"dist_m":D` (the caller
// closes it), after a comma unless it is the first.
void AppendNearItemHead(std::string& out, const GeoHit& hit, bool first) {
  out += first ? "{\"key\":" : ",{\"key\":";
  AppendJsonString(out, hit.key);
  out += ",\"dist_m\":";
  char digits[kDistanceChars];
  out.append(digits, PutDistance(digits, hit.dist_um));
}

// Copies `key` to `*p` (advancing it) while it is plain; false at the first
// byte that needs escaping, which sends the caller down its escaping path.
bool CopyPlainKey(char*& p, std::string_view key) {
  for (const char ch : key) {
    if (!IsPlainJsonChar(ch)) return false;
    *p++ = ch;
  }
  return true;
}

// Appends `hits` as near items without values. When every key is plain
// (the usual case) the items are written through a pointer into room made
// once, each key checked as it is copied: appending them piece by piece, a
// capacity check each, was about a tenth of a 500-item search's CPU. A key
// that needs escaping sends the whole answer down the escaping path.
void AppendNearItems(std::string& out, const std::vector<GeoHit>& hits) {
  static constexpr std::string_view kKey = "{\"key\":\"";
  static constexpr std::string_view kDist = "\",\"dist_m\":";
  size_t room = 0;
  for (const GeoHit& hit : hits) {
    room += 1 + kKey.size() + hit.key.size() + kDist.size() + kDistanceChars + 1;
  }
  const size_t start = out.size();
  out.resize(start + room);
  char* p = out.data() + start;
  auto put = [&p](std::string_view text) { p = std::copy(text.begin(), text.end(), p); };
  for (size_t i = 0; i < hits.size(); ++i) {
    if (i > 0) *p++ = ',';
    put(kKey);
    if (!CopyPlainKey(p, hits[i].key)) {
      out.resize(start);
      for (size_t j = 0; j < hits.size(); ++j) {
        AppendNearItemHead(out, hits[j], j == 0);
        out += '}';
      }
      return;
    }
    put(kDist);
    p = PutDistance(p, hits[i].dist_um);
    *p++ = '}';
  }
  out.resize(size_t(p - out.data()));
}

// Appends the keys of `hits` as a JSON array of strings, written through a
// pointer as AppendNearItems writes them, with the same escaping fallback.
void AppendKeyArray(std::string& out, const std::vector<GeoHit>& hits) {
  size_t room = 2;
  for (const GeoHit& hit : hits) room += hit.key.size() + 3;
  const size_t start = out.size();
  out.resize(start + room);
  char* p = out.data() + start;
  *p++ = '[';
  for (size_t i = 0; i < hits.size(); ++i) {
    if (i > 0) *p++ = ',';
    *p++ = '"';
    if (!CopyPlainKey(p, hits[i].key)) {
      out.resize(start);
      out += '[';
      for (size_t j = 0; j < hits.size(); ++j) {
        if (j > 0) out += ',';
        AppendJsonString(out, hits[j].key);
      }
      out += ']';
      return;
    }
    *p++ = '"';
  }
  *p++ = ']';
  out.resize(size_t(p - out.data()));
}

// Appends the distances of `hits` as a JSON array of numbers.
void AppendDistanceArray(std::string& out, const std::vector<GeoHit>& hits) {
  const size_t start = out.size();
  out.resize(start + 2 + hits.size() * (kDistanceChars + 1));
  char* p = out.data() + start;
  *p++ = '[';
  for (size_t i = 0; i < hits.size(); ++i) {
    if (i > 0) *p++ = ',';
    p = PutDistance(p, hits[i].dist_um);
  }
  *p++ = ']';
  out.resize(size_t(p - out.data()));
}

}  // namespace

std::string EncodeNearReply(uint64_t id, const std::vector<geo::GeoHit>& hits,
                            const NearValues* values, bool columns) {
  std::string reply;
  // One allocation for the whole reply instead of a doubling run: an item
  // without its value takes 37 bytes of room and its key (AppendNearItems).
  reply.reserve(64 + hits.size() * 64 +
                (values ? values->text.size() + values->ends.size() * 16 : 0));
  ReplyWriter w(reply, id);
  std::string& out = w.out();
  if (columns) {
    w.Open("keys");
    AppendKeyArray(out, hits);
    w.Open("dist_m");
    AppendDistanceArray(out, hits);
    if (values != nullptr) {
      w.Open("values");
      out += '[';
      for (size_t i = 0; i < hits.size(); ++i) {
        if (i > 0) out += ',';
        out += values->at(i);
      }
      out += ']';
    }
  } else if (values == nullptr) {
    w.Open("items");
    out += '[';
    AppendNearItems(out, hits);
    out += ']';
  } else {
    w.Open("items");
    out += '[';
    for (size_t i = 0; i < hits.size(); ++i) {
      AppendNearItemHead(out, hits[i], i == 0);
      out += ",\"value\":";
      out += values->at(i);
      out += '}';
    }
    out += ']';
  }
  return std::move(w.Finish());
}

namespace {

// The elements of a JSON array's text, each as written; nullopt when
// `text` is not one array.
std::optional<std::vector<std::string_view>> ArrayElements(std::string_view text) {
  const char* p = doc::SkipJsonSpace(text.data(), text.data() + text.size());
  const char* end = text.data() + text.size();
  if (p == end || *p != '[') return std::nullopt;
  std::vector<std::string_view> out;
  p = doc::SkipJsonSpace(p + 1, end);
  if (p < end && *p == ']')
    return doc::SkipJsonSpace(p + 1, end) == end ? std::optional(out) : std::nullopt;
  for (;;) {
    const char* begin = doc::SkipJsonSpace(p, end);
    p = doc::SkipJsonValue(begin, end, 1);
    if (p == nullptr) return std::nullopt;
    out.emplace_back(begin, size_t(p - begin));
    p = doc::SkipJsonSpace(p, end);
    if (p == end) return std::nullopt;
    if (*p == ']') break;
    if (*p != ',') return std::nullopt;
    ++p;
  }
  return doc::SkipJsonSpace(p + 1, end) == end ? std::optional(out) : std::nullopt;
}

// Whole micrometres of a distance as EncodeNearReply writes it (digits, and
// at most six decimals), read exactly; nullopt for anything else.
std::optional<int64_t> MicrometresOf(std::string_view text) {
  int64_t um = 0;
  size_t i = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    if (i >= 12) return std::nullopt;  // farther than any two points on Earth
    um = um * 10 + (text[i] - '0');
  }
  if (i == 0) return std::nullopt;
  int decimals = 0;
  if (i < text.size() && text[i] == '.') {
    for (++i; i < text.size() && text[i] >= '0' && text[i] <= '9' && decimals < 6; ++i) {
      um = um * 10 + (text[i] - '0');
      ++decimals;
    }
    if (decimals == 0) return std::nullopt;
  }
  if (i != text.size()) return std::nullopt;
  for (; decimals < 6; ++decimals) um *= 10;
  return um;
}

// The key a JSON string's text names: its bytes as they are when nothing
// in it is escaped (keys usually are plain), else through the JSON parser.
bool KeyOf(std::string_view text, std::string* key) {
  if (text.size() < 2 || text.front() != '"' || text.back() != '"') return false;
  const std::string_view inner = text.substr(1, text.size() - 2);
  if (inner.find('\\') == std::string_view::npos) {
    key->assign(inner);
    return true;
  }
  const nlohmann::json parsed = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_string()) return false;
  *key = parsed.get<std::string>();
  return true;
}

}  // namespace

bool DecodeNearColumns(std::string_view reply, std::vector<geo::GeoHit>* hits, NearValues* values) {
  // The top-level members, as written; a peer writes each name plainly.
  std::string_view keys_text, dist_text, values_text;
  bool ok = false;
  const char* p = doc::SkipJsonSpace(reply.data(), reply.data() + reply.size());
  const char* end = reply.data() + reply.size();
  if (p == end || *p != '{') return false;
  p = doc::SkipJsonSpace(p + 1, end);
  while (p < end && *p != '}') {
    const char* name_end = doc::SkipJsonString(p, end);
    if (name_end == nullptr) return false;
    const std::string_view name(p + 1, size_t(name_end - p - 2));
    p = doc::SkipJsonSpace(name_end, end);
    if (p == end || *p != ':') return false;
    const char* value = doc::SkipJsonSpace(p + 1, end);
    p = doc::SkipJsonValue(value, end, 1);
    if (p == nullptr) return false;
    const std::string_view text(value, size_t(p - value));
    if (name == "keys") keys_text = text;
    if (name == "dist_m") dist_text = text;
    if (name == "values") values_text = text;
    if (name == "ok") ok = text == "true";
    p = doc::SkipJsonSpace(p, end);
    if (p < end && *p == ',') p = doc::SkipJsonSpace(p + 1, end);
  }
  if (!ok || p == end || doc::SkipJsonSpace(p + 1, end) != end) return false;
  const auto keys = ArrayElements(keys_text);
  const auto dists = ArrayElements(dist_text);
  if (!keys || !dists || keys->size() != dists->size()) return false;
  std::optional<std::vector<std::string_view>> docs;
  if (values != nullptr) {
    docs = ArrayElements(values_text);
    if (!docs || docs->size() != keys->size()) return false;
  }
  std::vector<geo::GeoHit> decoded(keys->size());
  for (size_t i = 0; i < keys->size(); ++i) {
    const std::optional<int64_t> um = MicrometresOf((*dists)[i]);
    if (!um || !KeyOf((*keys)[i], &decoded[i].key)) return false;
    decoded[i].dist_um = *um;
  }
  std::move(decoded.begin(), decoded.end(), std::back_inserter(*hits));
  if (values != nullptr) {
    for (const std::string_view d : *docs) {
      values->text += d;
      values->ends.push_back(values->text.size());
    }
  }
  return true;
}

}  // namespace skiff::server::internal
