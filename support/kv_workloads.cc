#include "support/kv_workloads.h"

#include <cstdio>

#include <nlohmann/json.hpp>

namespace skiff::bench {

std::string KeyFor(uint64_t i) {
  char buf[24];
  snprintf(buf, sizeof buf, "k%09llu", static_cast<unsigned long long>(i));
  return buf;
}

std::string SmallValue(uint64_t i) {
  return "{\"n\":" + std::to_string(i) + ",\"s\":\"v" + std::to_string(i) + "\"}";
}

std::string PayloadValue(uint64_t i, size_t bytes) {
  const std::string tail = "\",\"n\":" + std::to_string(i) + "}";
  std::string out = "{\"blob\":\"";
  uint64_t x = i * 0x9E3779B97F4A7C15ull + 7;
  while (out.size() + tail.size() < bytes) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    out += static_cast<char>('a' + x % 26);
  }
  return out + tail;
}

bool SameJson(std::string_view got, std::string_view want) {
  if (got == want) return true;
  auto a = nlohmann::json::parse(got, nullptr, false);
  auto b = nlohmann::json::parse(want, nullptr, false);
  return !a.is_discarded() && !b.is_discarded() && a == b;
}

void AppendKeyOp(std::string& body, std::string_view op, std::string_view table,
                 std::string_view key) {
  body += "\"op\":\"";
  body += op;
  body += "\",\"table\":";
  AppendJsonString(body, table);
  body += ",\"key\":";
  AppendJsonString(body, key);
}

HotKeyReads::HotKeyReads(std::string_view table, std::string_view op)
    : value_(PayloadValue(1, 200)), is_get_(op == "get") {
  AppendKeyOp(preload_, "set", table, "hot");
  preload_ += ",\"value\":";
  preload_ += value_;
  AppendKeyOp(read_, op, table, "hot");
}

std::string HotKeyReads::Check(size_t, size_t, const ReplyView& reply) {
  if (ReplyMember(reply.text, "found") != "true") return "the hot key was not found";
  if (is_get_ && !SameJson(LastReplyMember(reply.text, "value"), value_)) {
    return "the hot key's value differs from what was written";
  }
  return {};
}

void EnsureSlot(std::vector<std::vector<uint64_t>>& table, size_t conn, size_t slot) {
  if (table.size() <= conn) table.resize(conn + 1);
  if (table[conn].size() <= slot) table[conn].resize(slot + 1);
}

bool UniqueSets::Next(size_t conn, size_t slot, std::string& body) {
  EnsureSlot(slot_key_, conn, slot);
  const uint64_t i = next_++;
  slot_key_[conn][slot] = i;
  AppendKeyOp(body, "set", table_, KeyFor(i));
  body += ",\"value\":";
  body += value_(i);
  return true;
}

std::string UniqueSets::Check(size_t conn, size_t slot, const ReplyView&) {
  const uint64_t i = slot_key_[conn][slot];
  if (acked_.size() <= i) acked_.resize(i + 1 + i / 2);
  acked_[i] = true;
  ++acked_count_;
  return {};
}

std::vector<uint64_t> UniqueSets::SampleAcked(size_t n) const {
  std::vector<uint64_t> all;
  for (uint64_t i = 0; i < acked_.size(); ++i) {
    if (acked_[i]) all.push_back(i);
  }
  if (all.size() <= n || n < 2) return all;
  std::vector<uint64_t> out;
  for (size_t j = 0; j < n; ++j) out.push_back(all[j * (all.size() - 1) / (n - 1)]);
  return out;
}

bool ReadBack::Next(size_t conn, size_t slot, std::string& body) {
  if (next_ >= ids_.size()) return false;
  EnsureSlot(slot_key_, conn, slot);
  const uint64_t i = ids_[next_++];
  slot_key_[conn][slot] = i;
  AppendKeyOp(body, "get", table_, KeyFor(i));
  return true;
}

std::string ReadBack::Check(size_t conn, size_t slot, const ReplyView& reply) {
  const uint64_t i = slot_key_[conn][slot];
  if (ReplyMember(reply.text, "found") != "true") return "acknowledged " + KeyFor(i) + " is gone";
  if (!SameJson(LastReplyMember(reply.text, "value"), value_(i))) {
    return "read of " + KeyFor(i) + " differs from what was written";
  }
  ++verified_;
  return {};
}

bool MixedChain::Next(size_t conn, size_t slot, std::string& body) {
  EnsureSlot(key_, conn, slot);
  EnsureSlot(step_, conn, slot);
  uint64_t& step = step_[conn][slot];
  if (step == 0) key_[conn][slot] = next_++;
  const std::string key = KeyFor(key_[conn][slot]);
  const uint64_t i = key_[conn][slot];
  switch (step) {
    case 0:
      AppendKeyOp(body, "set", table_, key);
      body += ",\"value\":" + SmallValue(i);
      break;
    case 1:
    case 4:
      AppendKeyOp(body, "get", table_, key);
      break;
    case 2:
    case 6:
      AppendKeyOp(body, "has", table_, key);
      break;
    case 3:
      AppendKeyOp(body, "add", table_, key);
      body += ",\"path\":[\"c\"],\"delta\":1";
      break;
    case 5:
      AppendKeyOp(body, "delete", table_, key);
      break;
  }
  return true;
}

std::string MixedChain::Check(size_t conn, size_t slot, const ReplyView& reply) {
  uint64_t& step = step_[conn][slot];
  const uint64_t i = key_[conn][slot];
  const uint64_t done = step;
  step = (step + 1) % kSteps;
  const std::string_view found = ReplyMember(reply.text, "found");
  switch (done) {
    case 1:
      return found == "true" && SameJson(LastReplyMember(reply.text, "value"), SmallValue(i))
                 ? ""
                 : "get after set of " + KeyFor(i) + " differs";
    case 2:
      return found == "true" ? "" : "has after set of " + KeyFor(i) + " said false";
    case 3:
      return ReplyMember(reply.text, "value") == "1" ? "" : "add on " + KeyFor(i) + " not 1";
    case 4: {
      const std::string want =
          "{\"c\":1,\"n\":" + std::to_string(i) + ",\"s\":\"v" + std::to_string(i) + "\"}";
      return found == "true" && SameJson(LastReplyMember(reply.text, "value"), want)
                 ? ""
                 : "get after add of " + KeyFor(i) + " differs";
    }
    case 5:
      return found == "true" ? "" : "delete of " + KeyFor(i) + " found nothing";
    case 6:
      ++chains_;
      return found == "false" ? "" : "has after delete of " + KeyFor(i) + " said true";
  }
  return {};
}

}  // namespace skiff::bench
