#include "doc/pack.h"

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include <zstd.h>

#include "doc/internal/msgpack.h"

namespace skiff::doc {
namespace {

// The first byte of every packed document names its format, so the format can
// change without a flag day. Packed documents live in memory only (the store
// keeps JSON text), so no old format has to be read after a restart; the tags
// still stay unique so a mix-up is caught rather than misread.
enum Format : uint8_t {
  kMsgpack = 0x01,      // MessagePack as is: small documents
  kZstdMsgpack = 0x02,  // a zstd frame holding the MessagePack, minus its magic
};

// Every zstd frame starts with these four bytes (little-endian 0xFD2FB528).
// The format tag already says what follows, so they are dropped from the
// packed bytes and put back before decompressing: 4 bytes of ~600 per 1 KB
// document, for one small copy on unpack.
constexpr char kZstdMagic[4] = {'\x28', '\xB5', '\x2F', '\xFD'};

// zstd's default level. Level 19 saves another 2 % for five times the packing
// time (docs/memory-tiers.md); packing happens once per idle period and
// unpacking speed hardly depends on the level.
constexpr int kZstdLevel = 3;

// Below this many bytes of MessagePack the frame's own overhead (about 10
// bytes) eats whatever zstd finds.
constexpr size_t kCompressFrom = 64;

// A frame claiming more than this is treated as corrupted rather than
// allocated for. MessagePack is at most about 2.5x the JSON text it came from
// (a float64 takes 9 bytes where "1.5," takes 4), so three times the largest
// document Parse accepts covers every real one; a bigger frame is corruption,
// and decoding it (up to one 16-byte Value per byte) would cost gigabytes.
constexpr unsigned long long kMaxUnpackedBytes = 3ULL * Limits{}.max_document_bytes;

// zstd contexts hold about 100-200 KB of tables each; making one per call
// would cost more than the work. One pair per thread keeps Pack and Unpack
// thread-safe without a lock.
struct ZstdContexts {
  ZstdContexts() : compress(ZSTD_createCCtx()), decompress(ZSTD_createDCtx()) {
    SKIFF_CHECK(compress != nullptr && decompress != nullptr);
    // Set once; ZSTD_compress2 keeps parameters between frames.
    SKIFF_CHECK(
        !ZSTD_isError(ZSTD_CCtx_setParameter(compress, ZSTD_c_compressionLevel, kZstdLevel)));
  }
  ~ZstdContexts() {
    ZSTD_freeCCtx(compress);
    ZSTD_freeDCtx(decompress);
  }
  ZstdContexts(const ZstdContexts&) = delete;
  ZstdContexts& operator=(const ZstdContexts&) = delete;

  ZSTD_CCtx* compress;
  ZSTD_DCtx* decompress;
};

ZstdContexts& ThreadContexts() {
  thread_local ZstdContexts contexts;
  return contexts;
}

}  // namespace

std::string Pack(const Value& value) {
  std::string msgpack;
  msgpack.push_back(static_cast<char>(kMsgpack));
  internal::AppendMsgpack(value, msgpack);
  const size_t body = msgpack.size() - 1;
  // The result is what stays in memory, so it is allocated at its exact size
  // rather than shrunk from a larger buffer.
  if (body >= kCompressFrom) {
    const size_t bound = ZSTD_compressBound(body);
    auto frame = std::make_unique_for_overwrite<char[]>(bound);
    const size_t n =
        ZSTD_compress2(ThreadContexts().compress, frame.get(), bound, msgpack.data() + 1, body);
    SKIFF_CHECK(!ZSTD_isError(n));  // the bound is always enough
    SKIFF_CHECK(n > sizeof kZstdMagic &&
                std::memcmp(frame.get(), kZstdMagic, sizeof kZstdMagic) == 0);
    const size_t kept = n - sizeof kZstdMagic;
    if (kept < body) {
      std::string packed;
      packed.reserve(1 + kept);
      packed.push_back(static_cast<char>(kZstdMsgpack));
      packed.append(frame.get() + sizeof kZstdMagic, kept);
      return packed;
    }
  }
  return std::string(msgpack.data(), msgpack.size());
}

Result<Value> Unpack(std::string_view packed) {
  if (packed.empty()) return Internal("corrupted packed document: no bytes");
  const auto format = static_cast<uint8_t>(packed[0]);
  const std::string_view body = packed.substr(1);
  switch (format) {
    case kMsgpack:
      return internal::DecodeMsgpack(body);
    case kZstdMsgpack: {
      auto frame = std::make_unique_for_overwrite<char[]>(sizeof kZstdMagic + body.size());
      std::memcpy(frame.get(), kZstdMagic, sizeof kZstdMagic);
      std::memcpy(frame.get() + sizeof kZstdMagic, body.data(), body.size());
      const size_t frame_size = sizeof kZstdMagic + body.size();
      const unsigned long long size = ZSTD_getFrameContentSize(frame.get(), frame_size);
      if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN ||
          size > kMaxUnpackedBytes) {
        return Internal("corrupted packed document: bad zstd frame header");
      }
      auto buffer = std::make_unique_for_overwrite<char[]>(size);
      const size_t n = ZSTD_decompressDCtx(ThreadContexts().decompress, buffer.get(), size,
                                           frame.get(), frame_size);
      if (ZSTD_isError(n) || n != size) {
        return Internal(std::string("corrupted packed document: ") +
                        (ZSTD_isError(n) ? ZSTD_getErrorName(n) : "short zstd frame"));
      }
      return internal::DecodeMsgpack(std::string_view(buffer.get(), n));
    }
    default:
      return Internal("corrupted packed document: unknown format " + std::to_string(format));
  }
}

}  // namespace skiff::doc
