// EXPECT_OK / ASSERT_OK for Status and Result<T>, printing the error on
// failure. Header-only; include it from any test.
#ifndef SKIFF_TEST_STATUS_MATCHERS_H_
#define SKIFF_TEST_STATUS_MATCHERS_H_

#include <gtest/gtest.h>

#include "base/status.h"

namespace skiff::test {

inline Status StatusOf(const Status& s) { return s; }
template <typename T>
Status StatusOf(const Result<T>& r) {
  return r.status();
}

template <typename T>
::testing::AssertionResult HasCode(const char* expr, const char* /*code_expr*/, const T& value,
                                   StatusCode code) {
  const Status s = StatusOf(value);
  if (s.code() == code) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << expr << " gave " << s.ToString() << ", expected " << StatusCodeName(code);
}

}  // namespace skiff::test

#define EXPECT_OK(expr) EXPECT_EQ(::skiff::test::StatusOf(expr).ToString(), "ok")
#define ASSERT_OK(expr) ASSERT_EQ(::skiff::test::StatusOf(expr).ToString(), "ok")
// Expects a failure with the given StatusCode (kBadRequest, ...).
#define EXPECT_STATUS(expr, code_name) \
  EXPECT_PRED_FORMAT2(::skiff::test::HasCode, expr, ::skiff::StatusCode::code_name)

#endif  // SKIFF_TEST_STATUS_MATCHERS_H_
