// The reply of `near` (docs/geo.md): the hits of a geo query with their
// distances, one object per item or parallel arrays (`columns`), with each
// item's document when the request asked for values.
// Pure functions; thread-safe.
#ifndef SKIFF_SERVER_INTERNAL_WIRE_NEAR_REPLY_H_
#define SKIFF_SERVER_INTERNAL_WIRE_NEAR_REPLY_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "geo/query.h"

namespace skiff::server::internal {

// The documents of a near answer, one per kept hit, as JSON text back to
// back: one string for all of them instead of one each.
struct NearValues {
  std::string text;
  std::vector<size_t> ends;  // where each document's text ends

  std::string_view at(size_t i) const {
    const size_t begin = i == 0 ? 0 : ends[i - 1];
    return std::string_view(text).substr(begin, ends[i] - begin);
  }
};

// `values` null: the items without documents; else one document per hit.
std::string EncodeNearReply(uint64_t id, const std::vector<geo::GeoHit>& hits,
                            const NearValues* values, bool columns);

// The hits of a successful reply in the `columns` form (what a cluster
// peer answers for its share of a near), appended to `*hits`, and their
// documents, as written, to `*values` when it is given. False, with
// nothing appended, when `reply` is not such a reply (its arrays of
// different lengths, a distance that is not one EncodeNearReply writes,
// values missing while asked for).
bool DecodeNearColumns(std::string_view reply, std::vector<geo::GeoHit>* hits, NearValues* values);

}  // namespace skiff::server::internal

#endif  // SKIFF_SERVER_INTERNAL_WIRE_NEAR_REPLY_H_
