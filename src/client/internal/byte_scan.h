// ScanToStop: the first byte of JSON text at or after `p` that a reader must
// look at: a quote, and on request a backslash and the control characters
// (0x00..0x1F), which may not appear raw in a string. Most of a reply's bytes
// are plain string bytes, so they are passed sixteen at a time with SSE2
// (every x86-64 has it), then eight at a time with the classic "has a zero
// byte" and "has a byte below n" word tests. Both take the first stop from
// the mask's lowest set bit: the word tests can flag bytes above a real stop
// (a borrow runs upwards), never below one. Thread-safe (no state).
#ifndef SKIFF_CLIENT_INTERNAL_BYTE_SCAN_H_
#define SKIFF_CLIENT_INTERNAL_BYTE_SCAN_H_

#include <bit>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace skiff::client::internal {

enum class Stops { kQuote, kQuoteBackslash, kQuoteBackslashControl };

template <Stops kStops>
inline bool IsStop(char c) {
  if (c == '"') return true;
  if constexpr (kStops != Stops::kQuote) {
    if (c == '\\') return true;
  }
  if constexpr (kStops == Stops::kQuoteBackslashControl) {
    if (static_cast<unsigned char>(c) < 0x20) return true;
  }
  return false;
}

// `end` when no stop byte comes first.
template <Stops kStops>
inline const char* ScanToStop(const char* p, const char* end) {
#if defined(__SSE2__)
  while (end - p >= 16) {
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    __m128i stop = _mm_cmpeq_epi8(x, _mm_set1_epi8('"'));
    if constexpr (kStops != Stops::kQuote) {
      stop = _mm_or_si128(stop, _mm_cmpeq_epi8(x, _mm_set1_epi8('\\')));
    }
    if constexpr (kStops == Stops::kQuoteBackslashControl) {
      // min(x, 0x1F) == x holds exactly for the bytes 0x00..0x1F (unsigned).
      stop = _mm_or_si128(stop, _mm_cmpeq_epi8(_mm_min_epu8(x, _mm_set1_epi8(0x1F)), x));
    }
    if (const int mask = _mm_movemask_epi8(stop); mask != 0)
      return p + std::countr_zero(unsigned(mask));
    p += 16;
  }
#endif
  static_assert(std::endian::native == std::endian::little, "the word test reads bytes low first");
  constexpr uint64_t kOnes = 0x0101010101010101ULL, kHigh = 0x8080808080808080ULL;
  while (end - p >= 8) {
    uint64_t x;
    std::memcpy(&x, p, sizeof x);
    const uint64_t quote = x ^ (kOnes * '"');
    uint64_t stop = (quote - kOnes) & ~quote;
    if constexpr (kStops != Stops::kQuote) {
      const uint64_t backslash = x ^ (kOnes * '\\');
      stop |= (backslash - kOnes) & ~backslash;
    }
    if constexpr (kStops == Stops::kQuoteBackslashControl) stop |= (x - kOnes * 0x20) & ~x;
    if (const uint64_t high = stop & kHigh; high != 0) return p + std::countr_zero(high) / 8;
    p += 8;
  }
  while (p < end && !IsStop<kStops>(*p)) ++p;
  return p;
}

}  // namespace skiff::client::internal

#endif  // SKIFF_CLIENT_INTERNAL_BYTE_SCAN_H_
