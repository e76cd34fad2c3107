// RFC 6455 framing for both ends of a connection: one frame reader and one
// set of frame writers, used by skiffd, by the suite's load client and
// connection fleet, and by the tests.
//
// The reader works in place on the caller's bytes: it unmasks a frame where
// it lies and hands its payload out as a view, so a message that arrives
// whole in one read is never copied. Only a message split into fragments is
// gathered into a buffer of the reader's own. Every rule of RFC 6455 section
// 5 that a receiver must enforce is checked, and a violation ends the
// connection with the close code the RFC names (1002 protocol error, 1007
// invalid UTF-8, 1009 too big).
//
// A FrameReader is a plain value owned by one connection; thread-compatible.
#ifndef SKIFF_WS_FRAME_H_
#define SKIFF_WS_FRAME_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "ws/utf8.h"

namespace skiff::ws {

enum class Opcode : uint8_t {
  kContinuation = 0x0,
  kText = 0x1,
  kBinary = 0x2,
  kClose = 0x8,
  kPing = 0x9,
  kPong = 0xA,
};

// Close codes (RFC 6455 section 7.4.1).
inline constexpr uint16_t kCloseNormal = 1000;
inline constexpr uint16_t kCloseGoingAway = 1001;
inline constexpr uint16_t kCloseProtocolError = 1002;
inline constexpr uint16_t kCloseUnsupportedData = 1003;
inline constexpr uint16_t kCloseNoStatus = 1005;  // never sent: "the close had no code"
inline constexpr uint16_t kCloseInvalidPayload = 1007;
inline constexpr uint16_t kClosePolicy = 1008;
inline constexpr uint16_t kCloseTooBig = 1009;
inline constexpr uint16_t kCloseInternalError = 1011;
inline constexpr uint16_t kCloseTryAgainLater = 1013;

// The largest frame header: 2 bytes, a 64-bit length, a masking key.
inline constexpr size_t kMaxHeaderBytes = 14;
// Control frames carry at most this much payload (section 5.5).
inline constexpr size_t kMaxControlPayload = 125;

// Which end reads: a server reads masked client frames, a client reads
// unmasked server frames; each refuses the other kind.
enum class Role { kServer, kClient };

// XORs `size` bytes with the masking key (its 4 bytes in wire order), a
// word at a time, as if the bytes started at a multiple of 4 in the payload.
void Mask(char* data, size_t size, const uint8_t key[4]);

// Appends the header of a final frame of `payload_size` bytes with the
// shortest length encoding; with `key`, the mask bit and key too.
void AppendHeader(std::string& out, Opcode opcode, uint64_t payload_size,
                  const uint8_t* key = nullptr);
// Appends a whole unmasked frame (what a server sends).
void AppendFrame(std::string& out, Opcode opcode, std::string_view payload);
// Appends a whole frame masked with `key` (what a client sends).
void AppendMaskedFrame(std::string& out, Opcode opcode, std::string_view payload, uint32_t key);
// The payload of a close frame: the code, then the reason cut to fit 125
// bytes at a code point boundary.
std::string ClosePayload(uint16_t code, std::string_view reason);

// Where client masking keys come from. RFC 6455 wants keys a script in a
// browser cannot predict; a SplitMix64 stream seeded once from
// std::random_device gives that at a few cycles a frame (random_device
// itself costs a system instruction per call). Thread-compatible.
class MaskKeys {
 public:
  MaskKeys();
  uint32_t Next();

 private:
  uint64_t state_;
};

// A whole message or control frame as the reader hands it out. The payload
// points into the caller's bytes or the reader's buffer and is valid only
// during the callback.
struct Message {
  Opcode opcode;  // kText, kBinary, kClose, kPing or kPong
  std::string_view payload;
  // For kClose: the code (kCloseNoStatus when the frame had none) and the
  // reason, both already validated.
  uint16_t close_code = 0;
  std::string_view close_reason;
};

class FrameReader {
 public:
  // Messages (a text or binary message's fragments together) over
  // `max_message_bytes` end the connection with 1009.
  FrameReader(Role role, size_t max_message_bytes)
      : role_(role), max_message_bytes_(max_message_bytes) {}

  struct Step {
    size_t consumed = 0;  // bytes of whole frames read from the front
    // When the bytes end inside a frame whose header is complete: that
    // frame's whole size (header and payload), so the caller can make room
    // for it; 0 otherwise.
    size_t frame_bytes = 0;
    bool stopped = false;  // the callback asked to stop
  };

  // Reads the whole frames at the front of [data, data + size), unmasking
  // them in place, and calls on_message(const Message&) for each complete
  // message and control frame; a false return stops after that message.
  // The caller keeps the bytes not consumed and calls again with more
  // appended. On a protocol violation failed() turns true, error_code() and
  // error_reason() say why, and nothing more is read.
  template <typename OnMessage>
  Step Read(char* data, size_t size, OnMessage&& on_message);

  bool failed() const { return error_code_ != 0; }
  uint16_t error_code() const { return error_code_; }
  const std::string& error_reason() const { return error_reason_; }
  // A fragmented message is under way.
  bool in_message() const { return in_message_; }
  // Bytes the reader holds for a fragmented message under way.
  size_t buffered_bytes() const { return fragments_.empty() ? 0 : fragments_.capacity(); }
  // Drops a fragmented message under way and its buffer.
  void Clear() {
    in_message_ = false;
    std::string().swap(fragments_);
  }

 private:
  struct Header {
    bool fin;
    Opcode opcode;
    size_t header_bytes;
    uint64_t payload_bytes;
    const uint8_t* key;  // null when unmasked
  };
  enum class HeaderResult { kOk, kNeedMore, kBad };
  // Parses and checks the header at `data`.
  HeaderResult ParseHeader(const char* data, size_t size, Header* h);
  // Checks and delivers one whole frame; false when it failed the reader.
  // `*deliver` is set when a message is ready in `*out`.
  bool Accept(const Header& h, char* payload, Message* out, bool* deliver);
  bool Fail(uint16_t code, std::string reason);
  // Drops the buffer of a message just delivered, keeping a small one.
  void EndMessage();

  const Role role_;
  const size_t max_message_bytes_;
  bool in_message_ = false;  // between a non-final first fragment and the final one
  Opcode message_opcode_ = Opcode::kText;
  std::string fragments_;  // the fragments of that message so far
  Utf8Validator utf8_;     // over the text message under way
  uint16_t error_code_ = 0;
  std::string error_reason_;
};

template <typename OnMessage>
FrameReader::Step FrameReader::Read(char* data, size_t size, OnMessage&& on_message) {
  Step step;
  while (!failed()) {
    Header h;
    HeaderResult parsed = ParseHeader(data + step.consumed, size - step.consumed, &h);
    if (parsed != HeaderResult::kOk) break;
    const uint64_t frame = h.header_bytes + h.payload_bytes;
    if (size - step.consumed < frame) {
      step.frame_bytes = static_cast<size_t>(frame);
      break;
    }
    char* payload = data + step.consumed + h.header_bytes;
    step.consumed += static_cast<size_t>(frame);
    Message message{};
    bool deliver = false;
    if (!Accept(h, payload, &message, &deliver)) break;
    if (!deliver) continue;
    const bool go_on = on_message(static_cast<const Message&>(message));
    if (message.opcode == Opcode::kText || message.opcode == Opcode::kBinary) EndMessage();
    if (!go_on) {
      step.stopped = true;
      break;
    }
  }
  return step;
}

}  // namespace skiff::ws

#endif  // SKIFF_WS_FRAME_H_
