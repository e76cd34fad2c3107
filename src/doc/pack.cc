#include "doc/pack.h"

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include <zstd.h>

#include "doc/internal/msgpack.h"
#include "doc/pack_dictionary.h"

namespace skiff::doc {
namespace {

// The first byte of every packed document names its format, so the format can
// change without a flag day. Packed documents live in memory only (the store
// keeps JSON text), so no old format has to be read after a restart; the tags
// still stay unique so a mix-up is caught rather than misread.
enum Format : uint8_t {
  kMsgpack = 0x01,      // MessagePack as is: small documents
  kZstdMsgpack = 0x02,  // a zstd frame holding the MessagePack, minus its magic
  kZstdJson = 0x03,     // a zstd frame holding compact JSON text, minus its magic
  kJson = 0x04,         // compact JSON text as is: short or incompressible text
  // A two-byte big-endian PackDictionary id, then a zstd frame of compact
  // JSON text made with that dictionary, minus its magic and with no
  // dictionary id of zstd's own.
  kZstdJsonDictionary = 0x05,
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
  ZstdContexts()
      : compress(ZSTD_createCCtx()),
        compress_with_dictionary(ZSTD_createCCtx()),
        decompress(ZSTD_createDCtx()) {
    SKIFF_CHECK(compress != nullptr && compress_with_dictionary != nullptr &&
                decompress != nullptr);
    // Set once; ZSTD_compress2 keeps parameters between frames.
    SKIFF_CHECK(
        !ZSTD_isError(ZSTD_CCtx_setParameter(compress, ZSTD_c_compressionLevel, kZstdLevel)));
    // The packed bytes name the dictionary themselves, in two bytes.
    SKIFF_CHECK(
        !ZSTD_isError(ZSTD_CCtx_setParameter(compress_with_dictionary, ZSTD_c_dictIDFlag, 0)));
  }
  ~ZstdContexts() {
    ZSTD_freeCCtx(compress);
    ZSTD_freeCCtx(compress_with_dictionary);
    ZSTD_freeDCtx(decompress);
  }
  ZstdContexts(const ZstdContexts&) = delete;
  ZstdContexts& operator=(const ZstdContexts&) = delete;

  ZSTD_CCtx* compress;
  ZSTD_CCtx* compress_with_dictionary;  // its dictionary is set per call
  ZSTD_DCtx* decompress;
};

ZstdContexts& ThreadContexts() {
  thread_local ZstdContexts contexts;
  return contexts;
}

// `tag`, then `id` in two bytes when a dictionary is given, then a zstd
// frame of `body` without its magic number, when that is shorter than
// `body`; empty otherwise. Allocated at its exact size, since it is what
// stays in memory.
std::string Compress(Format tag, std::string_view body,
                     const PackDictionary* dictionary = nullptr) {
  if (body.size() < kCompressFrom) return {};
  const size_t bound = ZSTD_compressBound(body.size());
  auto frame = std::make_unique_for_overwrite<char[]>(bound);
  ZSTD_CCtx* cctx = ThreadContexts().compress;
  if (dictionary != nullptr) {
    cctx = ThreadContexts().compress_with_dictionary;
    SKIFF_CHECK(!ZSTD_isError(ZSTD_CCtx_refCDict(cctx, dictionary->compress())));
  }
  const size_t n = ZSTD_compress2(cctx, frame.get(), bound, body.data(), body.size());
  SKIFF_CHECK(!ZSTD_isError(n));  // the bound is always enough
  SKIFF_CHECK(n > sizeof kZstdMagic &&
              std::memcmp(frame.get(), kZstdMagic, sizeof kZstdMagic) == 0);
  const size_t kept = n - sizeof kZstdMagic;
  const size_t id_bytes = dictionary != nullptr ? 2 : 0;
  if (id_bytes + kept >= body.size()) return {};
  std::string packed;
  packed.reserve(1 + id_bytes + kept);
  packed.push_back(static_cast<char>(tag));
  if (dictionary != nullptr) {
    packed.push_back(static_cast<char>(dictionary->id() >> 8));
    packed.push_back(static_cast<char>(dictionary->id() & 0xFF));
  }
  packed.append(frame.get() + sizeof kZstdMagic, kept);
  return packed;
}

// The content of a frame Compress wrote (`body` is what follows the tag), at
// its exact size. internal when it is not such a frame or claims more than
// kMaxUnpackedBytes. `dictionary` is the one it was made with, if any.
Result<std::string> Decompress(std::string_view body, const PackDictionary* dictionary = nullptr) {
  auto frame = std::make_unique_for_overwrite<char[]>(sizeof kZstdMagic + body.size());
  std::memcpy(frame.get(), kZstdMagic, sizeof kZstdMagic);
  std::memcpy(frame.get() + sizeof kZstdMagic, body.data(), body.size());
  const size_t frame_size = sizeof kZstdMagic + body.size();
  const unsigned long long size = ZSTD_getFrameContentSize(frame.get(), frame_size);
  if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN ||
      size > kMaxUnpackedBytes) {
    return Internal("corrupted packed document: bad zstd frame header");
  }
  std::string content(size, '\0');
  ZSTD_DCtx* dctx = ThreadContexts().decompress;
  const size_t n = dictionary != nullptr
                       ? ZSTD_decompress_usingDDict(dctx, content.data(), size, frame.get(),
                                                    frame_size, dictionary->decompress())
                       : ZSTD_decompressDCtx(dctx, content.data(), size, frame.get(), frame_size);
  if (ZSTD_isError(n) || n != size) {
    return Internal(std::string("corrupted packed document: ") +
                    (ZSTD_isError(n) ? ZSTD_getErrorName(n) : "short zstd frame"));
  }
  return content;
}

}  // namespace

std::string Pack(const Value& value) {
  std::string msgpack;
  msgpack.push_back(static_cast<char>(kMsgpack));
  internal::AppendMsgpack(value, msgpack);
  std::string packed = Compress(kZstdMsgpack, std::string_view(msgpack).substr(1));
  if (!packed.empty()) return packed;
  return std::string(msgpack.data(), msgpack.size());  // at its exact size
}

std::string PackText(std::string_view json, const PackDictionary* dictionary) {
  // Text too large for Decompress to accept back stays as it is.
  if (json.size() <= kMaxUnpackedBytes) {
    std::string packed = dictionary != nullptr ? Compress(kZstdJsonDictionary, json, dictionary)
                                               : Compress(kZstdJson, json);
    if (!packed.empty()) return packed;
  }
  std::string packed;
  packed.reserve(1 + json.size());
  packed.push_back(static_cast<char>(kJson));
  packed.append(json);
  return packed;
}

bool HoldsText(std::string_view packed) {
  if (packed.empty()) return false;
  const auto format = static_cast<uint8_t>(packed[0]);
  return format == kZstdJson || format == kJson || format == kZstdJsonDictionary;
}

uint32_t DictionaryIdOf(std::string_view packed) {
  if (packed.size() < 3 || static_cast<uint8_t>(packed[0]) != kZstdJsonDictionary) return 0;
  return (uint32_t{static_cast<uint8_t>(packed[1])} << 8) | static_cast<uint8_t>(packed[2]);
}

Result<Value> Unpack(std::string_view packed) {
  if (packed.empty()) return Internal("corrupted packed document: no bytes");
  const auto format = static_cast<uint8_t>(packed[0]);
  const std::string_view body = packed.substr(1);
  switch (format) {
    case kMsgpack:
      return internal::DecodeMsgpack(body);
    case kZstdMsgpack: {
      SKIFF_ASSIGN_OR_RETURN(std::string msgpack, Decompress(body));
      return internal::DecodeMsgpack(msgpack);
    }
    case kZstdJson:
    case kJson:
    case kZstdJsonDictionary: {
      // Without its dictionary UnpackText fails, as it should: no caller
      // holding such bytes unpacks them here.
      SKIFF_ASSIGN_OR_RETURN(std::string text, UnpackText(packed));
      // The depth Pack accepts, so whatever unpacks packs again.
      Result<Value> value = Parse(text, Limits{internal::kMaxPackedDepth, SIZE_MAX});
      if (!value.ok()) return Internal("corrupted packed document: " + value.status().message());
      return value;
    }
    default:
      return Internal("corrupted packed document: unknown format " + std::to_string(format));
  }
}

Result<std::string> UnpackText(std::string_view packed, const PackDictionary* dictionary) {
  const uint8_t format = packed.empty() ? 0 : static_cast<uint8_t>(packed[0]);
  if (format == kJson) return std::string(packed.substr(1));
  if (format == kZstdJson) return Decompress(packed.substr(1));
  if (format == kZstdJsonDictionary) {
    if (packed.size() < 3) return Internal("corrupted packed document: truncated data");
    if (dictionary == nullptr || dictionary->id() != DictionaryIdOf(packed)) {
      return Internal("packed document needs dictionary " + std::to_string(DictionaryIdOf(packed)) +
                      ", not given");
    }
    return Decompress(packed.substr(3), dictionary);
  }
  return Internal("corrupted packed document: not packed text");
}

}  // namespace skiff::doc
