// Partitions of the key space in cluster mode.
//
// Every (table, key) falls in one of kPartitions partitions, by a hash that
// is the same on every build and platform (FNV-1a over the table, a NUL and
// the key), so instances of different builds agree on who owns what.
// std::hash would not do: its values are the library's to choose.
// Pure functions; thread-safe.
#ifndef SKIFF_SERVER_CLUSTER_PARTITION_H_
#define SKIFF_SERVER_CLUSTER_PARTITION_H_

#include <cstdint>
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

// What an instance holds of a partition it owns: the owner's id and the
// partition's epoch, checked by every write transaction (fencing).
struct Lease {
  uint64_t owner = 0;
  uint64_t epoch = 0;
};

}  // namespace skiff::server::cluster

#endif  // SKIFF_SERVER_CLUSTER_PARTITION_H_
