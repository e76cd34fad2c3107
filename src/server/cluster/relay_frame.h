// Byte-level rewrites of the frames a cluster link relays: a request goes
// to its owner with the link's id in place of the client's, and the reply
// comes back with the client's id again, both as the text they arrived in.
// Building a tree for either (and serialising it again) was most of a
// forwarded request's cost; only the top-level members are walked here.
//
// The request text was already accepted by the decoder and the reply comes
// from a peer instance, but the scanner still stays inside the bytes it is
// given and says so when they are not an object it can walk.
// Pure functions; thread-safe.
#ifndef SKIFF_SERVER_CLUSTER_RELAY_FRAME_H_
#define SKIFF_SERVER_CLUSTER_RELAY_FRAME_H_

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

namespace skiff::server::cluster {

// `object` (a JSON object's text) with `"id":<id>` as its first member and
// every other member as written, except the top-level `id` members (under
// any spelling of the name: "i\u0064" is `id` too, so no member can slip a
// second id past the link) and those named in `drop`. nullopt when `object`
// is not a JSON object.
std::optional<std::string> WithId(std::string_view object, uint64_t id,
                                  std::initializer_list<std::string_view> drop = {});

// The text of the value of the top-level member `name` of `object`, as
// written; empty when there is none or `object` is not an object.
std::string_view MemberText(std::string_view object, std::string_view name);

// The value of the top-level `id` member when it is an unsigned integer.
std::optional<uint64_t> IdOf(std::string_view object);

// True for `{"ok":false,"error":{"code":"moved",...}}`: the peer does not
// serve the key's partition (docs/cluster.md).
bool IsMovedReply(std::string_view reply);

}  // namespace skiff::server::cluster

#endif  // SKIFF_SERVER_CLUSTER_RELAY_FRAME_H_
