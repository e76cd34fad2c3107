#include "support/ws_frame.h"

#include <algorithm>
#include <cstring>
#include <random>

namespace skiff::bench {
namespace {

constexpr size_t kMinSpace = 16 * 1024;

std::string Base64(const unsigned char* data, size_t n) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < n; i += 3) {
    uint32_t v = uint32_t{data[i]} << 16;
    if (i + 1 < n) v |= uint32_t{data[i + 1]} << 8;
    if (i + 2 < n) v |= data[i + 2];
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < n ? kAlphabet[(v >> 6) & 63] : '=';
    out += i + 2 < n ? kAlphabet[v & 63] : '=';
  }
  return out;
}

}  // namespace

std::string ClientHandshake(const std::string& host, uint16_t port) {
  std::random_device entropy;
  unsigned char nonce[16];
  for (unsigned char& b : nonce) b = static_cast<unsigned char>(entropy());
  return "GET / HTTP/1.1\r\nHost: " + host + ":" + std::to_string(port) +
         "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: " +
         Base64(nonce, sizeof nonce) + "\r\nSec-WebSocket-Version: 13\r\n\r\n";
}

MaskState::MaskState() {
  std::random_device entropy;
  state_ = (uint64_t{entropy()} << 32) | entropy() | 1;
}

uint32_t MaskState::NextKey() {
  state_ ^= state_ << 13;
  state_ ^= state_ >> 7;
  state_ ^= state_ << 17;
  return static_cast<uint32_t>(state_ >> 16);
}

void AppendMaskedFrame(std::string& out, uint8_t opcode, std::string_view payload,
                       MaskState& mask) {
  const size_t n = payload.size();
  unsigned char header[14];
  size_t h = 0;
  header[h++] = static_cast<unsigned char>(0x80 | opcode);
  if (n < 126) {
    header[h++] = static_cast<unsigned char>(0x80 | n);
  } else if (n <= 0xFFFF) {
    header[h++] = 0x80 | 126;
    header[h++] = static_cast<unsigned char>(n >> 8);
    header[h++] = static_cast<unsigned char>(n);
  } else {
    header[h++] = 0x80 | 127;
    for (int shift = 56; shift >= 0; shift -= 8) {
      header[h++] = static_cast<unsigned char>(uint64_t{n} >> shift);
    }
  }
  const uint32_t key = mask.NextKey();
  unsigned char k[4];
  std::memcpy(k, &key, 4);
  std::memcpy(header + h, k, 4);
  h += 4;
  const size_t at = out.size();
  out.resize(at + h + n);
  char* dst = out.data() + at;
  std::memcpy(dst, header, h);
  dst += h;
  // Eight bytes at a time: the key repeats every four, so a doubled key
  // masks a word in one xor.
  uint64_t wide;
  unsigned char k8[8] = {k[0], k[1], k[2], k[3], k[0], k[1], k[2], k[3]};
  std::memcpy(&wide, k8, 8);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t word;
    std::memcpy(&word, payload.data() + i, 8);
    word ^= wide;
    std::memcpy(dst + i, &word, 8);
  }
  for (; i < n; ++i) dst[i] = static_cast<char>(payload[i] ^ k[i & 3]);
}

FrameReader::Span FrameReader::Space() {
  // Move unread bytes to the front once they sit far in, and grow the
  // buffer when the frame in progress is larger than it.
  if (begin_ > 0 && (begin_ == end_ || buffer_.size() - end_ < kMinSpace)) {
    std::memmove(buffer_.data(), buffer_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  size_t need = std::max(end_ + kMinSpace, want_);
  if (buffer_.size() < need) buffer_.resize(std::max(need, buffer_.size() * 2));
  return {buffer_.data() + end_, buffer_.size() - end_};
}

void FrameReader::Append(std::string_view bytes) {
  while (!bytes.empty()) {
    Span s = Space();
    size_t n = std::min(s.size, bytes.size());
    std::memcpy(s.data, bytes.data(), n);
    Commit(n);
    bytes.remove_prefix(n);
  }
}

FrameReader::Outcome FrameReader::Next(Frame* frame) {
  for (;;) {
    const size_t have = end_ - begin_;
    if (have < 2) return kNeedMore;
    const auto* p = reinterpret_cast<const unsigned char*>(buffer_.data() + begin_);
    const bool fin = (p[0] & 0x80) != 0;
    const uint8_t opcode = p[0] & 0x0F;
    if ((p[0] & 0x70) != 0 || (p[1] & 0x80) != 0) return kBad;  // RSV bits, masked
    uint64_t len = p[1] & 0x7F;
    size_t header = 2;
    if (len == 126) {
      if (have < 4) return kNeedMore;
      len = (uint64_t{p[2]} << 8) | p[3];
      header = 4;
    } else if (len == 127) {
      if (have < 10) return kNeedMore;
      len = 0;
      for (int i = 0; i < 8; ++i) len = (len << 8) | p[2 + i];
      header = 10;
    }
    if (len > (uint64_t{1} << 32)) return kBad;
    if (opcode >= kOpClose && (len > 125 || !fin)) return kBad;
    if (have < header + len) {
      want_ = header + len;
      return kNeedMore;
    }
    want_ = 0;
    std::string_view payload(buffer_.data() + begin_ + header, len);
    begin_ += header + len;
    if (opcode >= kOpClose) {
      frame->opcode = opcode;
      frame->payload = payload;
      return kFrame;
    }
    if (opcode != kOpContinuation && fin && !in_message_) {
      frame->opcode = opcode;
      frame->payload = payload;
      return kFrame;
    }
    if (opcode != kOpContinuation) {
      if (in_message_) return kBad;  // a new message inside a fragmented one
      in_message_ = true;
      fragment_opcode_ = opcode;
    } else if (!in_message_) {
      return kBad;  // a continuation of nothing
    }
    fragments_.append(payload);
    if (!fin) continue;
    in_message_ = false;
    message_.swap(fragments_);
    fragments_.clear();
    frame->opcode = fragment_opcode_;
    frame->payload = message_;
    return kFrame;
  }
}

}  // namespace skiff::bench
