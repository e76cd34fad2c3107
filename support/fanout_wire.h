// The few wire formats the fan-out family's client reads: the change
// events of skiffd and of the WebSocket peers, Redis RESP replies and
// pushes, and NATS protocol operations. Small, allocation-free parsers over
// a received buffer: each returns how many bytes one message took, 0 when
// the buffer holds only part of it, kMalformed when it cannot be one.
//
// Pure functions: safe from any thread.
#ifndef SKIFF_SUPPORT_FANOUT_WIRE_H_
#define SKIFF_SUPPORT_FANOUT_WIRE_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "support/fanout_client.h"

namespace skiff::bench {

inline constexpr size_t kMalformed = std::numeric_limits<size_t>::max();

// `text` as a JSON string (quoted, with the escapes JSON needs).
std::string JsonString(std::string_view text);

// The unsigned integer right after the first `field` ("\"id\":") of
// `json`; false when there is none.
bool ParseNumber(std::string_view json, std::string_view field, uint64_t* out);

// A change event, skiffd's
//   {"event":"change","watch":W[,"coalesced":true],"table":T,"key":K,"value":V,"version":N}
// or a peer's {"event":"change","key":K,"value":V}: fills key, value (the
// exact text), version and coalesced of `d`. Keys are not escaped JSON
// strings here (the family's keys need no escapes); false otherwise. The
// value is not parsed: it is the text between `"value":` and the version
// or the closing brace, so the caller compares it with what was written.
bool ParseChange(std::string_view payload, FanoutDelivery* d);

// One RESP2 value: a simple string (+), an error (-), an integer (:) or an
// array of at most four bulk strings or integers (a pub/sub push or a
// subscription's confirmation).
struct RespMessage {
  char type = 0;                          // '+', '-', ':' or '*'
  std::string_view text;                  // + and -: the line; ':' the digits
  std::array<std::string_view, 4> items;  // '*': its elements
  size_t count = 0;
};
size_t ParseResp(std::string_view in, RespMessage* out);
// A RESP command of bulk strings.
std::string RespCommand(std::initializer_list<std::string_view> args);

// One NATS server operation: INFO, MSG, PING, PONG, +OK or -ERR.
struct NatsMessage {
  enum class Kind { kInfo, kMsg, kPing, kPong, kOk, kErr } kind = Kind::kOk;
  std::string_view subject;  // MSG
  std::string_view payload;  // MSG; -ERR its text
};
size_t ParseNats(std::string_view in, NatsMessage* out);

// A key as a NATS subject ('/' becomes '.') and back.
std::string NatsSubject(std::string_view key);
std::string KeyOfNatsSubject(std::string_view subject);

}  // namespace skiff::bench

#endif  // SKIFF_SUPPORT_FANOUT_WIRE_H_
