// TokenBucket: a rate with bursts, kept as one number (the time at which
// the bucket would be full again, as in the generic cell rate algorithm),
// so a table of them per user costs 8 bytes an entry.
//
// Pure arithmetic on times passed in; thread-compatible (callers lock).
#ifndef SKIFF_SERVER_INTERNAL_TOKEN_BUCKET_H_
#define SKIFF_SERVER_INTERNAL_TOKEN_BUCKET_H_

#include <algorithm>
#include <cstdint>

namespace skiff::server::internal {

class TokenBucket {
 public:
  // `rate` tokens a second (> 0), at most `burst` (>= 1) held.
  TokenBucket(double rate, uint64_t burst)
      : interval_ns_(std::max<int64_t>(1, static_cast<int64_t>(1e9 / rate))),
        slack_ns_(static_cast<int64_t>(burst > 0 ? burst - 1 : 0) * interval_ns_) {}

  // Takes a token at `now_ns` from the bucket whose state is `*full_at_ns`
  // (0 for a full bucket). Returns 0 when taken, else the nanoseconds until
  // one is there (the state is then unchanged).
  int64_t Take(int64_t now_ns, int64_t* full_at_ns) const {
    const int64_t from = std::max(*full_at_ns, now_ns);
    const int64_t ahead = from - now_ns;
    if (ahead > slack_ns_) return ahead - slack_ns_;
    *full_at_ns = from + interval_ns_;
    return 0;
  }

  // A bucket whose state is at or before `now_ns` is full: the same as no
  // entry at all, so it may be forgotten.
  static bool Full(int64_t now_ns, int64_t full_at_ns) { return full_at_ns <= now_ns; }

 private:
  int64_t interval_ns_;  // one token's worth of time
  int64_t slack_ns_;     // how far ahead of now the state may run: the burst
};

}  // namespace skiff::server::internal

#endif  // SKIFF_SERVER_INTERNAL_TOKEN_BUCKET_H_
