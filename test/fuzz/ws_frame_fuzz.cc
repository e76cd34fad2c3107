// Fuzz target for the WebSocket frame reader (src/ws/frame.h), both roles.
// Its promises: any bytes end in messages or a close code, never a crash or
// an over-read; the outcome does not depend on how the bytes were cut into
// reads (whole, one byte at a time, or at a cut the input chooses), unmasking
// and the UTF-8 check included; and frames the writers produce read back as
// exactly their payloads.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/check.h"

#include "ws/frame.h"

namespace {

using skiff::ws::FrameReader;
using skiff::ws::Message;
using skiff::ws::Opcode;
using skiff::ws::Role;

struct Outcome {
  std::vector<std::pair<Opcode, std::string>> messages;
  uint16_t error = 0;
  bool operator==(const Outcome&) const = default;
};

// Reads `bytes` in pieces of `piece` (0: whole), as a connection would.
Outcome Read(std::string_view bytes, Role role, size_t piece) {
  FrameReader reader(role, 4096);
  Outcome out;
  std::string pending;
  size_t at = 0;
  while (at < bytes.size() && !reader.failed()) {
    const size_t n = piece == 0 ? bytes.size() - at : std::min(piece, bytes.size() - at);
    pending.append(bytes.substr(at, n));
    at += n;
    FrameReader::Step step = reader.Read(pending.data(), pending.size(), [&](const Message& m) {
      out.messages.emplace_back(m.opcode, std::string(m.payload));
      return true;
    });
    SKIFF_CHECK(step.consumed <= pending.size());
    pending.erase(0, step.consumed);
  }
  out.error = reader.error_code();
  return out;
}

void CheckCutsAgree(std::string_view bytes, Role role) {
  const Outcome whole = Read(bytes, role, 0);
  SKIFF_CHECK(Read(bytes, role, 1) == whole);
  const size_t cut = bytes.empty() ? 1 : 1 + static_cast<uint8_t>(bytes[0]) % 61;
  SKIFF_CHECK(Read(bytes, role, cut) == whole);
}

// Cuts the input into payloads and writes them as masked client frames and
// as server frames: each must read back unchanged.
void CheckRoundTrip(std::string_view bytes) {
  std::vector<std::string> payloads;
  for (size_t at = 0; at < bytes.size();) {
    const size_t n = std::min<size_t>(static_cast<uint8_t>(bytes[at]) % 200, bytes.size() - at);
    payloads.emplace_back(bytes.substr(at, n));
    at += n + 1;
  }
  std::string client, server;
  skiff::ws::MaskKeys keys;
  for (const std::string& p : payloads) {
    skiff::ws::AppendMaskedFrame(client, Opcode::kBinary, p, keys.Next());
    skiff::ws::AppendFrame(server, Opcode::kBinary, p);
  }
  for (auto [wire, role] : {std::pair{&client, Role::kServer}, std::pair{&server, Role::kClient}}) {
    const Outcome out = Read(*wire, role, 0);
    SKIFF_CHECK(out.error == 0);
    SKIFF_CHECK(out.messages.size() == payloads.size());
    for (size_t i = 0; i < payloads.size(); ++i) {
      SKIFF_CHECK(out.messages[i].first == Opcode::kBinary);
      SKIFF_CHECK(out.messages[i].second == payloads[i]);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  CheckCutsAgree(bytes, Role::kServer);
  CheckCutsAgree(bytes, Role::kClient);
  CheckRoundTrip(bytes);
  return 0;
}
