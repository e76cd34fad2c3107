// The client side of RFC 6455 framing, for the load driver: the opening
// handshake request, masked frames out, unmasked server frames in.
//
// Only what a client of the v1 protocol meets is handled: text, close, ping
// and pong frames, fragmented messages reassembled, no extensions.
// Not thread-safe: one FrameReader per connection, used by one thread.
#ifndef SKIFF_SUPPORT_WS_FRAME_H_
#define SKIFF_SUPPORT_WS_FRAME_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace skiff::bench {

inline constexpr uint8_t kOpContinuation = 0x0;
inline constexpr uint8_t kOpText = 0x1;
inline constexpr uint8_t kOpBinary = 0x2;
inline constexpr uint8_t kOpClose = 0x8;
inline constexpr uint8_t kOpPing = 0x9;
inline constexpr uint8_t kOpPong = 0xA;

// The GET request that opens a WebSocket at ws://host:port/.
std::string ClientHandshake(const std::string& host, uint16_t port);

// Where masking keys come from. RFC 6455 asks for unpredictable keys so that
// proxies cannot be poisoned; a benchmark on loopback only needs keys that
// vary, so a xorshift generator seeded once from std::random_device does,
// at a cost of a few instructions a frame.
class MaskState {
 public:
  MaskState();
  uint32_t NextKey();

 private:
  uint64_t state_;
};

// Appends one complete masked frame carrying `payload`.
void AppendMaskedFrame(std::string& out, uint8_t opcode, std::string_view payload, MaskState& mask);
inline void AppendMaskedTextFrame(std::string& out, std::string_view payload, MaskState& mask) {
  AppendMaskedFrame(out, kOpText, payload, mask);
}

struct Frame {
  uint8_t opcode = 0;
  // Valid until the next call of FrameReader::Next, Append or Commit.
  std::string_view payload;
};

// Cuts the server's byte stream into whole messages.
class FrameReader {
 public:
  enum Outcome { kFrame, kNeedMore, kBad };
  struct Span {
    char* data;
    size_t size;
  };

  // Free space to read into (at least 16 KiB, more when a large frame is
  // being received); Commit(n) after reading n bytes into it.
  Span Space();
  void Commit(size_t n) { end_ += n; }
  void Append(std::string_view bytes);

  // The next whole message, kNeedMore when it has not all arrived, kBad for
  // a frame no server may send (masked, reserved bits, oversized control).
  Outcome Next(Frame* frame);

 private:
  std::vector<char> buffer_ = std::vector<char>(64 * 1024);
  size_t begin_ = 0;         // first unread byte
  size_t end_ = 0;           // one past the last byte read
  size_t want_ = 0;          // bytes the frame at begin_ needs in all, when known
  bool in_message_ = false;  // between the first and the last fragment
  std::string fragments_;    // a fragmented message being reassembled
  uint8_t fragment_opcode_ = 0;
  std::string message_;  // where a reassembled message is handed out from
};

}  // namespace skiff::bench

#endif  // SKIFF_SUPPORT_WS_FRAME_H_
