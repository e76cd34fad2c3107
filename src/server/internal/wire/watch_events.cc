#include "server/internal/wire/watch_events.h"

#include "server/internal/wire/json_text.h"

namespace skiff::server::internal {

std::string EncodeChangeBody(std::string_view table, std::string_view key,
                             std::optional<std::string_view> value, uint64_t version) {
  std::string out;
  out.reserve(48 + table.size() + key.size() + (value ? value->size() : 0));
  out += "\"table\":";
  AppendJsonString(out, table);
  out += ",\"key\":";
  AppendJsonString(out, key);
  if (value) {
    out += ",\"value\":";
    out += *value;
  } else {
    out += ",\"deleted\":true";
  }
  out += ",\"version\":";
  out += std::to_string(version);
  out += '}';
  return out;
}

std::string EncodeChangeHead(uint64_t watch, bool coalesced) {
  return "{\"event\":\"change\",\"watch\":" + std::to_string(watch) +
         (coalesced ? ",\"coalesced\":true," : ",");
}

std::string EncodeWatchReply(uint64_t id, uint64_t watch, uint64_t version) {
  return "{\"id\":" + std::to_string(id) + ",\"ok\":true,\"watch\":" + std::to_string(watch) +
         ",\"version\":" + std::to_string(version) + "}";
}

std::string EncodeInitialEvent(uint64_t watch, std::string_view key, std::string_view value) {
  std::string out = "{\"event\":\"initial\",\"watch\":" + std::to_string(watch) + ",\"key\":";
  AppendJsonString(out, key);
  out += ",\"value\":";
  out += value;
  out += '}';
  return out;
}

std::string EncodeReadyEvent(uint64_t watch, uint64_t version) {
  return "{\"event\":\"ready\",\"watch\":" + std::to_string(watch) +
         ",\"version\":" + std::to_string(version) + "}";
}

std::string EncodeResyncEvent(uint64_t watch, uint64_t version) {
  return "{\"event\":\"resync\",\"watch\":" + std::to_string(watch) +
         ",\"version\":" + std::to_string(version) + "}";
}

std::string EncodeEndedEvent(uint64_t watch, std::string_view reason, std::string_view message) {
  std::string out = "{\"event\":\"ended\",\"watch\":" + std::to_string(watch) + ",\"reason\":";
  AppendJsonString(out, reason);
  out += ",\"message\":";
  AppendJsonString(out, message);
  out += '}';
  return out;
}

}  // namespace skiff::server::internal
