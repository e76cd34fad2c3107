// The bytes of LmdbStorage's file, format v1: its keys and values, written
// and read here only (lmdb_storage.cc runs the transactions around them).
//
// One LMDB database, keys ordered bytewise:
//   "m"                              the meta: version, sync position, last_seq
//   "o" + seq (8 bytes, big-endian)  an outbox entry, so the outbox is in seq order
//   "r" + E(group) E(table) E(key)   a row; the value is its JSON text
// E escapes each 0x00 byte as 00 FF and ends the part with 00 01, so names
// with any bytes stay apart and the keys sort as the (group, table, key)
// tuples do: a table's rows are one range.
//
// A row key of kMaxKeyBytes or more is cut: its first bytes, then the first
// bytes of the SHA-256 of the whole key, exactly kMaxKeyBytes in all (so a
// reader tells cut keys by their length). The value of a cut key is a
// bucket: every row whose key cuts to it, each with its full name, so two
// names that share a cut key live side by side.
//
// Decoders take bytes from a file that may be damaged or written by another
// program: they check every length and refuse anything the encoders would
// not have written (each accepted input encodes back to the same bytes).
// Plain functions on values: thread-safe.
#ifndef SKIFF_CLIENT_INTERNAL_LMDB_FORMAT_H_
#define SKIFF_CLIENT_INTERNAL_LMDB_FORMAT_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "client/device_storage.h"

namespace skiff::client::internal {

inline constexpr uint8_t kLmdbFormatVersion = 1;
// Fixed by the format, not read from the LMDB build: a file must cut its
// keys the same way whichever library opens it. LMDB's default build
// allows exactly this much.
inline constexpr size_t kMaxKeyBytes = 511;
// The SHA-256 bytes a cut key ends in.
inline constexpr size_t kHashBytes = 16;
// The most a length field holds: the longest name part or bucket value.
inline constexpr size_t kMaxFieldBytes = UINT32_MAX;

inline constexpr char kMetaPrefix = 'm';
inline constexpr char kOutboxPrefix = 'o';
inline constexpr char kRowPrefix = 'r';
inline constexpr std::string_view kMetaKey = "m";

struct LmdbMeta {
  SyncPosition position;
  uint64_t last_seq = 0;
};

std::string EncodeMeta(const LmdbMeta& meta);
// False when `in` is not a v1 meta (another program's value, or damaged).
bool DecodeMeta(std::string_view in, LmdbMeta& meta);

std::string OutboxKey(uint64_t seq);
// False when `key` is not an outbox key.
bool DecodeOutboxKey(std::string_view key, uint64_t& seq);
// An outbox value: the name, then 1 and the value, or 0 for a delete.
std::string EncodeOutbox(const OutboxEntry& entry);
bool DecodeOutbox(std::string_view key, std::string_view value, OutboxEntry& entry);

struct RowKey {
  std::string bytes;
  bool cut = false;  // exactly kMaxKeyBytes bytes; its value is a bucket
};
// The key of the row `name`; a cut key ends in `hash_bytes` bytes of the
// SHA-256 (kHashBytes in files; fewer only in tests, to make collisions).
// nullopt only when OpenSSL cannot compute the hash.
std::optional<RowKey> RowKeyOf(const RowName& name, size_t hash_bytes = kHashBytes);
inline bool IsCutRowKey(std::string_view key) { return key.size() == kMaxKeyBytes; }
// The name in a row key that is not cut; false when malformed (or cut).
bool DecodeRowKey(std::string_view key, RowName& name);

// A bucket holds one or more rows, in strictly increasing name order.
// Every name part and value must be at most kMaxFieldBytes.
std::string EncodeBucket(const std::vector<StoredRow>& rows);
// Appends the bucket's rows to `rows`; false, leaving `rows` as it was,
// when malformed (empty, out of order, or cut short).
bool DecodeBucket(std::string_view value, std::vector<StoredRow>& rows);

}  // namespace skiff::client::internal

#endif  // SKIFF_CLIENT_INTERNAL_LMDB_FORMAT_H_
