// ScanNumber: the JSON number grammar (RFC 8259, section 6) as one kernel
// for every reader that walks JSON text without building a tree: the
// server's request scanner and the client's reply reader. Each decides
// what it accepts (the scanner leaves exponents to the full parser, the
// reader's Unsigned wants a plain integer) from what the scan reports, so
// the grammar itself is written once. Thread-safe (no state).
#ifndef SKIFF_DOC_JSON_NUMBER_H_
#define SKIFF_DOC_JSON_NUMBER_H_

namespace skiff::doc {

struct NumberScan {
  const char* end = nullptr;  // one past the number; nullptr: not a number
  bool negative = false;
  bool fraction = false;  // a '.' part
  bool exponent = false;  // an 'e' part
};

inline bool IsJsonDigit(char c) { return c >= '0' && c <= '9'; }

// The longest number that starts at `p` (no whitespace is skipped), never
// reading at or past `end`. A number ends where its grammar does: in "01"
// it is the "0", and whatever follows is the caller's to judge.
inline NumberScan ScanNumber(const char* p, const char* end) {
  NumberScan scan;
  if (p < end && *p == '-') {
    scan.negative = true;
    ++p;
  }
  if (p == end || !IsJsonDigit(*p)) return scan;
  if (*p == '0') {
    ++p;
  } else {
    while (p < end && IsJsonDigit(*p)) ++p;
  }
  if (p < end && *p == '.') {
    ++p;
    if (p == end || !IsJsonDigit(*p)) return scan;
    while (p < end && IsJsonDigit(*p)) ++p;
    scan.fraction = true;
  }
  if (p < end && (*p == 'e' || *p == 'E')) {
    ++p;
    if (p < end && (*p == '+' || *p == '-')) ++p;
    if (p == end || !IsJsonDigit(*p)) return scan;
    while (p < end && IsJsonDigit(*p)) ++p;
    scan.exponent = true;
  }
  scan.end = p;
  return scan;
}

}  // namespace skiff::doc

#endif  // SKIFF_DOC_JSON_NUMBER_H_
