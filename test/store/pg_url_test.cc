#include "store/internal/pg_url.h"

#include <gtest/gtest.h>

#include "test/status_matchers.h"

namespace skiff::store::internal {
namespace {

TEST(PgUrlTest, TakesOutTheStoresParametersAndAddsAConnectTimeout) {
  auto parsed = ParsePgUrl(
      "postgresql://u@h:5/db?statement_timeout_ms=2000&application_name=x&lock_timeout_ms=300"
      "&call_timeout_ms=4000",
      PostgresOptions());
  ASSERT_OK(parsed);
  EXPECT_EQ(parsed->libpq_url, "postgresql://u@h:5/db?application_name=x&connect_timeout=5");
  EXPECT_EQ(parsed->options.statement_timeout.count(), 2000);
  EXPECT_EQ(parsed->options.lock_timeout.count(), 300);
  EXPECT_EQ(parsed->options.call_timeout.count(), 4000);
}

TEST(PgUrlTest, KeepsDefaultsAndAConnectTimeoutGiven) {
  PostgresOptions defaults;
  defaults.lock_timeout = std::chrono::milliseconds(7);
  auto parsed = ParsePgUrl("postgres://h/db?connect_timeout=2", defaults);
  ASSERT_OK(parsed);
  EXPECT_EQ(parsed->libpq_url, "postgres://h/db?connect_timeout=2");
  EXPECT_EQ(parsed->options.lock_timeout.count(), 7);
  EXPECT_EQ(ParsePgUrl("postgres://h/db", defaults)->libpq_url,
            "postgres://h/db?connect_timeout=5");
}

TEST(PgUrlTest, RefusesBadValues) {
  EXPECT_STATUS(ParsePgUrl("postgres://h/db?statement_timeout_ms=0", {}), kBadRequest);
  EXPECT_STATUS(ParsePgUrl("postgres://h/db?lock_timeout_ms=abc", {}), kBadRequest);
  EXPECT_STATUS(ParsePgUrl("postgres://h/db?call_timeout_ms=", {}), kBadRequest);
}

}  // namespace
}  // namespace skiff::store::internal
