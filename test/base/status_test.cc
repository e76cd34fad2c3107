#include "base/status.h"

#include <gtest/gtest.h>

namespace skiff {
namespace {

TEST(StatusTest, DefaultIsOk) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.ToString(), "ok");
}

TEST(StatusTest, CarriesCodeAndMessage) {
  Status s = TooLarge("key is 2000 bytes");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kTooLarge);
  EXPECT_EQ(s.ToString(), "too_large: key is 2000 bytes");
}

TEST(StatusTest, CodeNamesRoundTrip) {
  for (int c = 0; c <= static_cast<int>(StatusCode::kOutcomeUnknown); ++c) {
    auto code = static_cast<StatusCode>(c);
    EXPECT_EQ(StatusCodeFromName(StatusCodeName(code)), code);
  }
  EXPECT_EQ(StatusCodeFromName("no_such_code"), std::nullopt);
  EXPECT_EQ(StatusCodeName(StatusCode::kOutcomeUnknown), "outcome_unknown");
}

TEST(ResultTest, HoldsValueOrError) {
  Result<int> good = 7;
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, 7);
  EXPECT_TRUE(good.status().ok());

  Result<int> bad = BadRequest("nope");
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kBadRequest);
}

TEST(ResultDeathTest, ValueOfErrorAborts) {
  Result<int> bad = Internal("broken");
  EXPECT_DEATH((void)bad.value(), "check failed");
}

TEST(ResultDeathTest, ResultFromOkStatusAborts) {
  EXPECT_DEATH(
      {
        Result<int> r = Status::Ok();
        (void)r;
      },
      "check failed");
}

Status FailsSecond(int* calls) {
  auto step = [&](bool fail) {
    ++*calls;
    return fail ? Unavailable("down") : Status::Ok();
  };
  SKIFF_RETURN_IF_ERROR(step(false));
  SKIFF_RETURN_IF_ERROR(step(true));
  SKIFF_RETURN_IF_ERROR(step(false));
  return Status::Ok();
}

TEST(StatusTest, ReturnIfErrorStopsAtFirstFailure) {
  int calls = 0;
  Status s = FailsSecond(&calls);
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_EQ(calls, 2);
}

}  // namespace
}  // namespace skiff
