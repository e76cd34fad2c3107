#include "client/internal/lmdb_format.h"

#include <utility>

#include <openssl/evp.h>

namespace skiff::client::internal {
namespace {

constexpr std::string_view kMagic = "skiff-device-lmdb";
constexpr size_t kSeqBytes = 8;
constexpr size_t kLengthBytes = 4;

void AppendBigEndian(std::string& out, uint64_t v) {
  for (int shift = 56; shift >= 0; shift -= 8) out.push_back(static_cast<char>(v >> shift));
}

uint64_t ReadBigEndian(std::string_view in) {
  uint64_t v = 0;
  for (size_t i = 0; i < kSeqBytes; ++i) v = (v << 8) | static_cast<unsigned char>(in[i]);
  return v;
}

void AppendText(std::string& out, std::string_view text) {
  for (size_t i = 0; i < kLengthBytes; ++i)
    out.push_back(static_cast<char>(text.size() >> (8 * i)));
  out += text;
}

void AppendName(std::string& out, const RowName& name) {
  AppendText(out, name.group);
  AppendText(out, name.table);
  AppendText(out, name.key);
}

// Reads what the encoders above write; every read checks the bytes are there.
class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  bool empty() const { return in_.empty(); }
  std::string_view rest() const { return in_; }

  bool Byte(uint8_t& v) {
    if (in_.empty()) return false;
    v = static_cast<uint8_t>(in_[0]);
    in_.remove_prefix(1);
    return true;
  }
  // A byte written for a bool: 0 or 1 only, so one value has one encoding.
  bool Flag(bool& v) {
    uint8_t b = 0;
    if (!Byte(b) || b > 1) return false;
    v = b == 1;
    return true;
  }
  bool Number(uint64_t& v) {
    if (in_.size() < kSeqBytes) return false;
    v = ReadBigEndian(in_);
    in_.remove_prefix(kSeqBytes);
    return true;
  }
  bool Text(std::string& v) {
    if (in_.size() < kLengthBytes) return false;
    size_t n = 0;
    for (size_t i = 0; i < kLengthBytes; ++i) {
      n |= size_t{static_cast<unsigned char>(in_[i])} << (8 * i);
    }
    in_.remove_prefix(kLengthBytes);
    if (in_.size() < n) return false;  // checked before any allocation
    v.assign(in_.data(), n);
    in_.remove_prefix(n);
    return true;
  }
  bool Name(RowName& name) { return Text(name.group) && Text(name.table) && Text(name.key); }
  bool Prefix(std::string_view p) {
    if (in_.substr(0, p.size()) != p) return false;
    in_.remove_prefix(p.size());
    return true;
  }

 private:
  std::string_view in_;
};

// One part of a row key: NUL escaped as 00 FF, the end marked 00 01. A
// shorter part sorts first (00 01 is below any byte or escape that could
// follow), so the keys sort as the tuples do.
void AppendPart(std::string& out, std::string_view part) {
  for (char c : part) {
    out.push_back(c);
    if (c == '\0') out.push_back('\xff');
  }
  out.push_back('\0');
  out.push_back('\x01');
}

bool ReadPart(std::string_view& in, std::string& part) {
  part.clear();
  for (;;) {
    const size_t nul = in.find('\0');
    if (nul == std::string_view::npos || nul + 1 >= in.size()) return false;
    part.append(in.data(), nul);
    const char mark = in[nul + 1];
    in.remove_prefix(nul + 2);
    if (mark == '\x01') return true;
    if (mark != '\xff') return false;
    part.push_back('\0');
  }
}

}  // namespace

std::string EncodeMeta(const LmdbMeta& meta) {
  std::string out(kMagic);
  out.push_back(static_cast<char>(kLmdbFormatVersion));
  AppendBigEndian(out, meta.position.cursor);
  out.push_back(meta.position.bootstrapped ? 1 : 0);
  AppendBigEndian(out, meta.position.bootstrap_cursor);
  AppendBigEndian(out, meta.last_seq);
  out.push_back(meta.position.bootstrap_after ? 1 : 0);
  if (meta.position.bootstrap_after) AppendName(out, *meta.position.bootstrap_after);
  return out;
}

bool DecodeMeta(std::string_view in, LmdbMeta& meta) {
  Reader r(in);
  uint8_t version = 0;
  bool has_after = false;
  if (!r.Prefix(kMagic) || !r.Byte(version) || version != kLmdbFormatVersion) return false;
  if (!r.Number(meta.position.cursor) || !r.Flag(meta.position.bootstrapped) ||
      !r.Number(meta.position.bootstrap_cursor) || !r.Number(meta.last_seq) || !r.Flag(has_after)) {
    return false;
  }
  meta.position.bootstrap_after.reset();
  if (has_after) {
    RowName after;
    if (!r.Name(after)) return false;
    meta.position.bootstrap_after = std::move(after);
  }
  return r.empty();
}

std::string OutboxKey(uint64_t seq) {
  std::string k(1, kOutboxPrefix);
  AppendBigEndian(k, seq);
  return k;
}

bool DecodeOutboxKey(std::string_view key, uint64_t& seq) {
  if (key.size() != 1 + kSeqBytes || key[0] != kOutboxPrefix) return false;
  seq = ReadBigEndian(key.substr(1));
  return true;
}

std::string EncodeOutbox(const OutboxEntry& entry) {
  std::string out;
  out.reserve(3 * kLengthBytes + 1 + entry.name.group.size() + entry.name.table.size() +
              entry.name.key.size() + (entry.value ? entry.value->size() : 0));
  AppendName(out, entry.name);
  out.push_back(entry.value ? 1 : 0);
  if (entry.value) out += *entry.value;
  return out;
}

bool DecodeOutbox(std::string_view key, std::string_view value, OutboxEntry& entry) {
  if (!DecodeOutboxKey(key, entry.seq)) return false;
  Reader r(value);
  bool has_value = false;
  if (!r.Name(entry.name) || !r.Flag(has_value)) return false;
  if (has_value) {
    entry.value = std::string(r.rest());
    return true;
  }
  entry.value.reset();
  return r.empty();
}

std::optional<RowKey> RowKeyOf(const RowName& name, size_t hash_bytes) {
  RowKey k;
  k.bytes.reserve(1 + name.group.size() + name.table.size() + name.key.size() + 6);
  k.bytes.push_back(kRowPrefix);
  AppendPart(k.bytes, name.group);
  AppendPart(k.bytes, name.table);
  AppendPart(k.bytes, name.key);
  if (k.bytes.size() < kMaxKeyBytes) return k;
  // A cryptographic hash: names come from other users' writes, and with a
  // weak one (FNV) they could pick names that share a cut key on purpose.
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int digest_size = 0;
  if (EVP_Digest(k.bytes.data(), k.bytes.size(), digest, &digest_size, EVP_sha256(), nullptr) !=
          1 ||
      digest_size < hash_bytes) {
    return std::nullopt;
  }
  k.bytes.resize(kMaxKeyBytes - hash_bytes);
  k.bytes.append(reinterpret_cast<const char*>(digest), hash_bytes);
  k.cut = true;
  return k;
}

bool DecodeRowKey(std::string_view key, RowName& name) {
  if (key.empty() || key[0] != kRowPrefix || key.size() >= kMaxKeyBytes) return false;
  key.remove_prefix(1);
  return ReadPart(key, name.group) && ReadPart(key, name.table) && ReadPart(key, name.key) &&
         key.empty();
}

std::string EncodeBucket(const std::vector<StoredRow>& rows) {
  size_t size = 0;
  for (const StoredRow& row : rows) {
    size += 4 * kLengthBytes + row.name.group.size() + row.name.table.size() + row.name.key.size() +
            row.value.size();
  }
  std::string out;
  out.reserve(size);
  for (const StoredRow& row : rows) {
    AppendName(out, row.name);
    AppendText(out, row.value);
  }
  return out;
}

bool DecodeBucket(std::string_view value, std::vector<StoredRow>& rows) {
  if (value.empty()) return false;
  const size_t first = rows.size();
  Reader r(value);
  while (!r.empty()) {
    StoredRow row;
    if (!r.Name(row.name) || !r.Text(row.value) ||
        (rows.size() > first && !(rows.back().name < row.name))) {
      rows.resize(first);
      return false;
    }
    rows.push_back(std::move(row));
  }
  return true;
}

}  // namespace skiff::client::internal
