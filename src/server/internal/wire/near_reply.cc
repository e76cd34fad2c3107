#include "server/internal/wire/near_reply.h"

#include <algorithm>

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

}  // namespace skiff::server::internal
