// The shared JSON number kernel (doc/json_number.h) against the full parser:
// a text is one whole number for the kernel exactly when the parser takes it
// as a number; and the client reader's Unsigned, built on the kernel, takes
// only plain non-negative integers that fit 64 bits.
#include "doc/json_number.h"

#include <cstdint>
#include <string>
#include <string_view>

#include <gtest/gtest.h>

#include "client/internal/json_reader.h"
#include "doc/document.h"

namespace skiff {
namespace {

bool WholeNumber(std::string_view text) {
  const doc::NumberScan scan = doc::ScanNumber(text.data(), text.data() + text.size());
  return scan.end == text.data() + text.size();
}

TEST(JsonNumberTest, TheKernelAgreesWithTheParser) {
  for (std::string_view text : {"0",
                                "-0",
                                "7",
                                "-12",
                                "10",
                                "0.5",
                                "-0.25",
                                "1e5",
                                "1E+5",
                                "2.5e-3",
                                "01",
                                "-",
                                "+1",
                                ".5",
                                "1.",
                                "1e",
                                "1e+",
                                "-a",
                                "00",
                                "1.2.3",
                                "0x10",
                                "1ee5",
                                "9007199254740993",
                                "18446744073709551616",
                                ""}) {
    const Result<doc::Value> parsed = doc::Parse(text);
    EXPECT_EQ(WholeNumber(text), parsed.ok() && parsed->is_number()) << "'" << text << "'";
  }
}

TEST(JsonNumberTest, TheScanReportsItsParts) {
  const std::string text = "-1.5e3,";
  const doc::NumberScan scan = doc::ScanNumber(text.data(), text.data() + text.size());
  ASSERT_NE(scan.end, nullptr);
  EXPECT_EQ(*scan.end, ',');
  EXPECT_TRUE(scan.negative);
  EXPECT_TRUE(scan.fraction);
  EXPECT_TRUE(scan.exponent);
}

TEST(JsonNumberTest, TheReaderTakesOnlyPlainUnsignedIntegers) {
  auto read = [](std::string_view text, uint64_t* out) {
    client::internal::JsonReader in(text);
    return in.Unsigned(out);
  };
  uint64_t v = 0;
  EXPECT_TRUE(read(" 42", &v));
  EXPECT_EQ(v, 42u);
  EXPECT_TRUE(read("18446744073709551615", &v));
  EXPECT_EQ(v, UINT64_MAX);
  for (std::string_view bad : {"18446744073709551616", "-1", "1.5", "1e3", "01", "x", ""}) {
    EXPECT_FALSE(read(bad, &v)) << bad;
  }
}

}  // namespace
}  // namespace skiff
