#include "base/status.h"

#include <memory>
#include <string>

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
  for (int c = 0; c <= static_cast<int>(StatusCode::kMoved); ++c) {
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

// A source of Results that counts how often it is called, so the tests can
// tell that the macro evaluates its expression once.
struct Source {
  int calls = 0;
  Result<int> Next(Result<int> r) {
    ++calls;
    return r;
  }
};

Status SumTwo(Source* src, Result<int> a, Result<int> b, int* out) {
  SKIFF_ASSIGN_OR_RETURN(int first, src->Next(std::move(a)));
  SKIFF_ASSIGN_OR_RETURN(const int second, src->Next(std::move(b)));  // a second temporary
  *out = first + second;
  return Status::Ok();
}

TEST(AssignOrReturnTest, DeclaresTheValueOnSuccess) {
  Source src;
  int out = 0;
  EXPECT_EQ(SumTwo(&src, 3, 4, &out), Status::Ok());
  EXPECT_EQ(out, 7);
  EXPECT_EQ(src.calls, 2);
}

TEST(AssignOrReturnTest, ReturnsTheErrorUnchanged) {
  Source src;
  int out = -1;
  Status s = SumTwo(&src, 3, Status(StatusCode::kOutcomeUnknown, "lost at COMMIT"), &out);
  EXPECT_EQ(s, Status(StatusCode::kOutcomeUnknown, "lost at COMMIT"));
  EXPECT_EQ(out, -1);
  EXPECT_EQ(src.calls, 2);

  src.calls = 0;
  s = SumTwo(&src, TooLarge("first"), 4, &out);
  EXPECT_EQ(s, TooLarge("first"));
  EXPECT_EQ(src.calls, 1);  // stopped before the second expression
}

Status AssignExisting(Result<std::string> r, std::string* target) {
  SKIFF_ASSIGN_OR_RETURN(*target, std::move(r));
  return Status::Ok();
}

TEST(AssignOrReturnTest, AssignsAnExistingVariable) {
  std::string target = "before";
  EXPECT_EQ(AssignExisting(std::string("after"), &target), Status::Ok());
  EXPECT_EQ(target, "after");
  EXPECT_EQ(AssignExisting(BadRequest("no"), &target), BadRequest("no"));
  EXPECT_EQ(target, "after");
}

Result<std::unique_ptr<int>> MakeBox(int v) {
  if (v < 0) return BadRequest("negative");
  return std::make_unique<int>(v);
}

Result<std::unique_ptr<int>> DoubledBox(int v) {
  SKIFF_ASSIGN_OR_RETURN(std::unique_ptr<int> box, MakeBox(v));
  *box *= 2;
  return box;
}

TEST(AssignOrReturnTest, MovesAMoveOnlyValue) {
  Result<std::unique_ptr<int>> good = DoubledBox(21);
  ASSERT_TRUE(good.ok());
  ASSERT_NE(*good, nullptr);
  EXPECT_EQ(**good, 42);
}

Result<int> Halved(Result<int> in) {
  SKIFF_ASSIGN_OR_RETURN(auto v, in);
  if (v % 2 != 0) return BadRequest("odd");
  return v / 2;
}

TEST(AssignOrReturnTest, WorksInAFunctionReturningResult) {
  Result<int> half = Halved(10);
  ASSERT_TRUE(half.ok());
  EXPECT_EQ(*half, 5);
  EXPECT_EQ(Halved(Unavailable("disk")).status(), Unavailable("disk"));
  EXPECT_EQ(Halved(3).status(), BadRequest("odd"));
  EXPECT_EQ(DoubledBox(-1).status(), BadRequest("negative"));
}

}  // namespace
}  // namespace skiff
