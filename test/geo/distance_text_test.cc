#include "geo/distance_text.h"

#include <cstdint>
#include <cstdio>
#include <random>
#include <string>

#include <gtest/gtest.h>

namespace skiff::geo {
namespace {

std::string Text(int64_t um) {
  char buf[kDistanceChars];
  return std::string(buf, PutDistance(buf, um));
}

// The same text the slow way: six decimals from printf, trailing zeros and
// then a bare point cut.
std::string Reference(int64_t um) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%lld.%06lld", static_cast<long long>(um / 1'000'000),
                static_cast<long long>(um % 1'000'000));
  std::string s(buf);
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s;
}

TEST(DistanceTextTest, EdgeValues) {
  EXPECT_EQ(Text(0), "0");
  EXPECT_EQ(Text(1), "0.000001");
  EXPECT_EQ(Text(10), "0.00001");
  EXPECT_EQ(Text(120), "0.00012");
  EXPECT_EQ(Text(50'000), "0.05");
  EXPECT_EQ(Text(999'999), "0.999999");
  EXPECT_EQ(Text(1'000'000), "1");
  EXPECT_EQ(Text(1'000'001), "1.000001");
  EXPECT_EQ(Text(12'500'000), "12.5");
  EXPECT_EQ(Text(100'075'572), "100.075572");
  // Half the circumference of the 6,371,008.8 m sphere, the longest.
  EXPECT_EQ(Text(20'015'114'442'036), "20015114.442036");
  EXPECT_EQ(Text(99'999'999'999'999).size(), kDistanceChars - 1);
}

TEST(DistanceTextTest, AgreesWithPrintfOnRandomValues) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 200'000; ++i) {
    int64_t um = int64_t(rng() % 20'015'114'442'037ULL);
    if (i % 3 == 0) um -= um % 1000;  // trailing zeros
    if (i % 5 == 0) um %= 1'000'000;  // under a metre
    ASSERT_EQ(Text(um), Reference(um)) << um;
  }
}

}  // namespace
}  // namespace skiff::geo
