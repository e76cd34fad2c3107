// The text of a `near` answer's distances: whole micrometres written as
// metres, the one form `dist_m` takes on the wire (docs/protocol.md).
// Constants and a pure function; thread-safe.
#ifndef SKIFF_GEO_DISTANCE_TEXT_H_
#define SKIFF_GEO_DISTANCE_TEXT_H_

#include <array>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace skiff::geo {

// Room for a distance as PutDistance writes it: at most 8 digits of metres
// (the antipode is 2.0e7 m away), a point and 6 decimals.
inline constexpr size_t kDistanceChars = 16;

// "00".."99", two characters each.
inline constexpr std::array<char, 200> kDigitPairs = [] {
  std::array<char, 200> pairs{};
  for (int i = 0; i < 100; ++i) {
    pairs[size_t(2 * i)] = char('0' + i / 10);
    pairs[size_t(2 * i + 1)] = char('0' + i % 10);
  }
  return pairs;
}();

// Writes `um` micrometres (0 to 99,999,999,999,999) as metres at `p`,
// returning the end: the whole metres, then a point and up to six decimals
// without trailing zeros (12.5, 1234.000001, 0). Integer digits, two at a
// time, cost about 11 ns a distance here; the shortest round-trip text of a
// double took 46, a sixth of a 500-item search.
inline char* PutDistance(char* p, int64_t um) {
  p = std::to_chars(p, p + 8, um / 1'000'000).ptr;
  const auto fraction = uint32_t(um % 1'000'000);
  if (fraction == 0) return p;
  p[0] = '.';
  std::memcpy(p + 1, &kDigitPairs[2 * (fraction / 10'000)], 2);
  std::memcpy(p + 3, &kDigitPairs[2 * (fraction / 100 % 100)], 2);
  std::memcpy(p + 5, &kDigitPairs[2 * (fraction % 100)], 2);
  char* end = p + 7;
  while (end[-1] == '0') --end;  // stops at a digit: the fraction is not 0
  return end;
}

}  // namespace skiff::geo

#endif  // SKIFF_GEO_DISTANCE_TEXT_H_
