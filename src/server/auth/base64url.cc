#include "server/auth/base64url.h"

#include <array>
#include <cstdint>

namespace skiff::server::auth {
namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
constexpr uint8_t kInvalid = 0xff;

constexpr std::array<uint8_t, 256> MakeTable() {
  std::array<uint8_t, 256> table{};
  table.fill(kInvalid);
  for (uint8_t i = 0; i < 64; ++i) table[static_cast<uint8_t>(kAlphabet[i])] = i;
  return table;
}
constexpr std::array<uint8_t, 256> kTable = MakeTable();

}  // namespace

std::optional<std::string> DecodeBase64Url(std::string_view text) {
  // A single leftover character carries only 6 bits: no whole byte.
  if (text.size() % 4 == 1) return std::nullopt;
  std::string out;
  out.reserve(text.size() / 4 * 3 + 2);
  uint32_t bits = 0;
  int count = 0;
  for (const char c : text) {
    const uint8_t v = kTable[static_cast<uint8_t>(c)];
    if (v == kInvalid) return std::nullopt;
    bits = (bits << 6) | v;
    count += 6;
    if (count >= 8) {
      count -= 8;
      out.push_back(static_cast<char>((bits >> count) & 0xff));
    }
  }
  // What is left must be zero: otherwise two texts would decode alike.
  if ((bits & ((1u << count) - 1)) != 0) return std::nullopt;
  return out;
}

std::string EncodeBase64Url(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() * 4 + 2) / 3);
  uint32_t bits = 0;
  int count = 0;
  for (const char c : bytes) {
    bits = (bits << 8) | static_cast<uint8_t>(c);
    count += 8;
    while (count >= 6) {
      count -= 6;
      out.push_back(kAlphabet[(bits >> count) & 0x3f]);
    }
  }
  if (count > 0) out.push_back(kAlphabet[(bits << (6 - count)) & 0x3f]);
  return out;
}

}  // namespace skiff::server::auth
