#include "ws/frame.h"

#include <cstring>
#include <random>

namespace skiff::ws {
namespace {

bool IsControl(Opcode op) { return static_cast<uint8_t>(op) >= 0x8; }

bool IsKnown(uint8_t op) { return op <= 0x2 || (op >= 0x8 && op <= 0xA); }

// Close codes a peer may send (section 7.4): the defined ones that are not
// reserved for local use, and the registered and private ranges.
bool IsSendableCloseCode(uint16_t code) {
  if (code >= 3000 && code <= 4999) return true;
  switch (code) {
    case 1000:
    case 1001:
    case 1002:
    case 1003:
    case 1007:
    case 1008:
    case 1009:
    case 1010:
    case 1011:
    case 1012:
    case 1013:
    case 1014:
      return true;
    default:
      return false;
  }
}

}  // namespace

void Mask(char* data, size_t size, const uint8_t key[4]) {
  uint8_t repeated[8];
  for (size_t i = 0; i < 8; ++i) repeated[i] = key[i & 3];
  uint64_t word_key;
  std::memcpy(&word_key, repeated, sizeof word_key);
  size_t i = 0;
  for (; i + 8 <= size; i += 8) {
    uint64_t word;
    std::memcpy(&word, data + i, sizeof word);
    word ^= word_key;
    std::memcpy(data + i, &word, sizeof word);
  }
  // Eight is a multiple of four, so the tail starts at key byte 0 again.
  for (size_t k = 0; i < size; ++i, ++k) data[i] = static_cast<char>(data[i] ^ key[k & 3]);
}

void AppendHeader(std::string& out, Opcode opcode, uint64_t payload_size, const uint8_t* key) {
  char header[kMaxHeaderBytes];
  size_t n = 0;
  header[n++] = static_cast<char>(0x80 | static_cast<uint8_t>(opcode));  // FIN
  const uint8_t mask_bit = key ? 0x80 : 0x00;
  if (payload_size < 126) {
    header[n++] = static_cast<char>(mask_bit | payload_size);
  } else if (payload_size <= 0xFFFF) {
    header[n++] = static_cast<char>(mask_bit | 126);
    header[n++] = static_cast<char>(payload_size >> 8);
    header[n++] = static_cast<char>(payload_size & 0xFF);
  } else {
    header[n++] = static_cast<char>(mask_bit | 127);
    for (int shift = 56; shift >= 0; shift -= 8) {
      header[n++] = static_cast<char>((payload_size >> shift) & 0xFF);
    }
  }
  if (key) {
    std::memcpy(header + n, key, 4);
    n += 4;
  }
  out.append(header, n);
}

void AppendFrame(std::string& out, Opcode opcode, std::string_view payload) {
  AppendHeader(out, opcode, payload.size());
  out.append(payload);
}

void AppendMaskedFrame(std::string& out, Opcode opcode, std::string_view payload, uint32_t key) {
  uint8_t bytes[4];
  std::memcpy(bytes, &key, sizeof bytes);
  AppendHeader(out, opcode, payload.size(), bytes);
  const size_t at = out.size();
  out.append(payload);
  Mask(out.data() + at, payload.size(), bytes);
}

std::string ClosePayload(uint16_t code, std::string_view reason) {
  std::string payload;
  payload.push_back(static_cast<char>(code >> 8));
  payload.push_back(static_cast<char>(code & 0xFF));
  size_t room = kMaxControlPayload - 2;
  if (reason.size() > room) {
    // Cut before a continuation byte so the reason stays valid UTF-8.
    while (room > 0 && (static_cast<unsigned char>(reason[room]) & 0xC0) == 0x80) --room;
    reason = reason.substr(0, room);
  }
  payload.append(reason);
  return payload;
}

MaskKeys::MaskKeys() {
  std::random_device seed;
  state_ = (uint64_t{seed()} << 32) | seed();
}

uint32_t MaskKeys::Next() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return static_cast<uint32_t>((z ^ (z >> 31)) >> 32);
}

FrameReader::HeaderResult FrameReader::ParseHeader(const char* data, size_t size, Header* h) {
  if (size < 2) return HeaderResult::kNeedMore;
  const auto* b = reinterpret_cast<const uint8_t*>(data);
  h->fin = (b[0] & 0x80) != 0;
  if (b[0] & 0x70) {
    Fail(kCloseProtocolError, "reserved bits set, but no extension was agreed");
    return HeaderResult::kBad;
  }
  const uint8_t op = b[0] & 0x0F;
  if (!IsKnown(op)) {
    Fail(kCloseProtocolError, "unknown opcode " + std::to_string(op));
    return HeaderResult::kBad;
  }
  h->opcode = static_cast<Opcode>(op);
  const bool masked = (b[1] & 0x80) != 0;
  if (role_ == Role::kServer && !masked) {
    Fail(kCloseProtocolError, "client frames must be masked");
    return HeaderResult::kBad;
  }
  if (role_ == Role::kClient && masked) {
    Fail(kCloseProtocolError, "server frames must not be masked");
    return HeaderResult::kBad;
  }
  const uint8_t len7 = b[1] & 0x7F;
  const size_t length_bytes = len7 == 126 ? 2 : len7 == 127 ? 8 : 0;
  h->header_bytes = 2 + length_bytes + (masked ? 4 : 0);
  // A control frame's limits are known from the first two bytes.
  if (IsControl(h->opcode)) {
    if (!h->fin) {
      Fail(kCloseProtocolError, "control frames must not be fragmented");
      return HeaderResult::kBad;
    }
    if (len7 > kMaxControlPayload) {
      Fail(kCloseProtocolError, "control frame payload over 125 bytes");
      return HeaderResult::kBad;
    }
  }
  if (size < h->header_bytes) return HeaderResult::kNeedMore;
  uint64_t length = len7;
  if (len7 == 126) {
    length = (uint64_t{b[2]} << 8) | b[3];
    if (length < 126) {
      Fail(kCloseProtocolError, "frame length not in its shortest form");
      return HeaderResult::kBad;
    }
  } else if (len7 == 127) {
    length = 0;
    for (size_t i = 0; i < 8; ++i) length = (length << 8) | b[2 + i];
    if (length >> 63) {
      Fail(kCloseProtocolError, "frame length has its most significant bit set");
      return HeaderResult::kBad;
    }
    if (length <= 0xFFFF) {
      Fail(kCloseProtocolError, "frame length not in its shortest form");
      return HeaderResult::kBad;
    }
  }
  h->payload_bytes = length;
  h->key = masked ? b + 2 + length_bytes : nullptr;
  if (!IsControl(h->opcode)) {
    if (h->opcode == Opcode::kContinuation && !in_message_) {
      Fail(kCloseProtocolError, "continuation frame outside a fragmented message");
      return HeaderResult::kBad;
    }
    if (h->opcode != Opcode::kContinuation && in_message_) {
      Fail(kCloseProtocolError, "new message started inside a fragmented one");
      return HeaderResult::kBad;
    }
    // Refused from the header alone, so an oversized message is never read.
    const uint64_t so_far = in_message_ ? fragments_.size() : 0;
    if (length > max_message_bytes_ || so_far + length > max_message_bytes_) {
      Fail(kCloseTooBig, "message of at least " + std::to_string(so_far + length) +
                             " bytes is over the limit of " + std::to_string(max_message_bytes_));
      return HeaderResult::kBad;
    }
  }
  return HeaderResult::kOk;
}

bool FrameReader::Accept(const Header& h, char* payload, Message* out, bool* deliver) {
  const size_t n = static_cast<size_t>(h.payload_bytes);
  if (h.key) Mask(payload, n, h.key);
  if (IsControl(h.opcode)) {
    out->opcode = h.opcode;
    out->payload = std::string_view(payload, n);
    if (h.opcode == Opcode::kClose) {
      if (n == 1) return Fail(kCloseProtocolError, "close frame with a one-byte payload");
      out->close_code = kCloseNoStatus;
      if (n >= 2) {
        const auto* b = reinterpret_cast<const uint8_t*>(payload);
        out->close_code = static_cast<uint16_t>((b[0] << 8) | b[1]);
        if (!IsSendableCloseCode(out->close_code)) {
          return Fail(kCloseProtocolError,
                      "close code " + std::to_string(out->close_code) + " may not be sent");
        }
        out->close_reason = std::string_view(payload + 2, n - 2);
        if (!IsValidUtf8(out->close_reason)) {
          return Fail(kCloseInvalidPayload, "close reason is not valid UTF-8");
        }
      }
    }
    *deliver = true;
    return true;
  }
  const Opcode message_opcode = h.opcode == Opcode::kContinuation ? message_opcode_ : h.opcode;
  if (message_opcode == Opcode::kText) {
    if (h.opcode != Opcode::kContinuation) utf8_.Reset();
    // Checked frame by frame, so invalid text fails before the rest arrives.
    if (!utf8_.Feed(payload, n)) return Fail(kCloseInvalidPayload, "text is not valid UTF-8");
    if (h.fin && !utf8_.complete()) {
      return Fail(kCloseInvalidPayload, "text ends inside a UTF-8 sequence");
    }
  }
  if (h.fin && !in_message_) {
    // The common case: a whole message in one frame, handed out in place.
    out->opcode = message_opcode;
    out->payload = std::string_view(payload, n);
    *deliver = true;
    return true;
  }
  if (!in_message_) {
    in_message_ = true;
    message_opcode_ = h.opcode;
  }
  fragments_.append(payload, n);
  if (h.fin) {
    in_message_ = false;
    out->opcode = message_opcode_;
    out->payload = fragments_;
    *deliver = true;
  }
  return true;
}

bool FrameReader::Fail(uint16_t code, std::string reason) {
  error_code_ = code;
  error_reason_ = std::move(reason);
  return false;
}

void FrameReader::EndMessage() {
  if (fragments_.capacity() > 4096) {
    std::string().swap(fragments_);
  } else {
    fragments_.clear();
  }
}

}  // namespace skiff::ws
