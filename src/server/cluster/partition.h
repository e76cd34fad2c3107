// Partitions of the key space in cluster mode.
//
// Every (table, key) falls in one of kPartitions partitions, by a hash that
// is the same on every build and platform (FNV-1a over the table, a NUL and
// the key), so instances of different builds agree on who owns what.
// std::hash would not do: its values are the library's to choose.
// Pure functions; thread-safe.
#ifndef SKIFF_SERVER_CLUSTER_PARTITION_H_
#define SKIFF_SERVER_CLUSTER_PARTITION_H_

#include <bitset>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace skiff::server::cluster {

inline constexpr uint32_t kPartitions = 1024;

inline uint32_t PartitionOf(std::string_view table, std::string_view key) {
  uint64_t h = 14695981039346656037ull;
  auto mix = [&h](std::string_view bytes) {
    for (unsigned char c : bytes) {
      h ^= c;
      h *= 1099511628211ull;
    }
  };
  mix(table);
  mix(std::string_view("\0", 1));
  mix(key);
  return static_cast<uint32_t>(h % kPartitions);
}

// A set of partitions, as one instance asks another to answer a `near` for
// (docs/cluster.md, "near"): on the wire, kPartitions / 4 hex digits, the
// first digit holding partitions 0 to 3 (partition 0 its lowest bit).
using PartitionSet = std::bitset<kPartitions>;

inline std::string PartitionSetText(const PartitionSet& set) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(kPartitions / 4, '0');
  for (uint32_t i = 0; i < kPartitions / 4; ++i) {
    unsigned digit = 0;
    for (uint32_t b = 0; b < 4; ++b) digit |= unsigned(set[i * 4 + b]) << b;
    out[i] = kHex[digit];
  }
  return out;
}

// nullopt unless `text` is what PartitionSetText writes.
inline std::optional<PartitionSet> ParsePartitionSet(std::string_view text) {
  if (text.size() != kPartitions / 4) return std::nullopt;
  PartitionSet set;
  for (uint32_t i = 0; i < kPartitions / 4; ++i) {
    const char c = text[i];
    unsigned digit = 0;
    if (c >= '0' && c <= '9') {
      digit = unsigned(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      digit = unsigned(c - 'a' + 10);
    } else {
      return std::nullopt;
    }
    for (uint32_t b = 0; b < 4; ++b) set[i * 4 + b] = (digit >> b) & 1;
  }
  return set;
}

// What an instance holds of a partition it owns: the owner's id and the
// partition's epoch, checked by every write transaction (fencing).
struct Lease {
  uint64_t owner = 0;
  uint64_t epoch = 0;
};

}  // namespace skiff::server::cluster

#endif  // SKIFF_SERVER_CLUSTER_PARTITION_H_
