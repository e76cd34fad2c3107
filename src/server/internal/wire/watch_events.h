// The frames of `watch` (docs/protocol.md, "watch / unwatch"): the reply
// that opens a watch, and the events pushed on it.
//
// A change is encoded once, whatever the number of watches it reaches: its
// body (`"table":..,"key":..,"value":..,"version":N}`) is shared, and each
// watch prefixes it with its own small head (`{"event":"change","watch":W,`),
// so a frame is head + body. Pure functions; thread-safe.
#ifndef SKIFF_SERVER_INTERNAL_WIRE_WATCH_EVENTS_H_
#define SKIFF_SERVER_INTERNAL_WIRE_WATCH_EVENTS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace skiff::server::internal {

// The shared body of a change: `value` is the document's JSON text, or
// nullopt when it was deleted.
std::string EncodeChangeBody(std::string_view table, std::string_view key,
                             std::optional<std::string_view> value, uint64_t version);
// The head of a change on watch `watch`; `coalesced` tells the client that
// earlier changes of this key were replaced by this one.
std::string EncodeChangeHead(uint64_t watch, bool coalesced);

// {"id":..,"ok":true,"watch":W,"version":V}
std::string EncodeWatchReply(uint64_t id, uint64_t watch, uint64_t version);
// One current value of a watch opened with `initial`.
std::string EncodeInitialEvent(uint64_t watch, std::string_view key, std::string_view value);
// The end of the initial values: changes after `version` follow.
std::string EncodeReadyEvent(uint64_t watch, uint64_t version);
// The changes since the client's `since` are no longer held: it reads the
// values again; changes after `version` follow.
std::string EncodeResyncEvent(uint64_t watch, uint64_t version);
// The watch ended: `reason` is "overflow", "logout" or "unwatch"-like words
// in `message`; nothing more comes on it.
std::string EncodeEndedEvent(uint64_t watch, std::string_view reason, std::string_view message);

}  // namespace skiff::server::internal

#endif  // SKIFF_SERVER_INTERNAL_WIRE_WATCH_EVENTS_H_
