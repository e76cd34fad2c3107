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

TEST(PgUrlTest, MovesTheLostHostToTheEndOfAMultiHostList) {
  const std::string url =
      "postgresql://skiff@127.0.0.1:6001,127.0.0.1:6002,127.0.0.1:6003/skiff?"
      "target_session_attrs=read-write";
  EXPECT_EQ(WithHostLast(url, "127.0.0.1", "6001"),
            "postgresql://skiff@127.0.0.1:6002,127.0.0.1:6003,127.0.0.1:6001/skiff?"
            "target_session_attrs=read-write");
  EXPECT_EQ(WithHostLast(url, "127.0.0.1", "6002"),
            "postgresql://skiff@127.0.0.1:6001,127.0.0.1:6003,127.0.0.1:6002/skiff?"
            "target_session_attrs=read-write");
  // Already last, not in the list, or a single host: unchanged.
  EXPECT_EQ(WithHostLast(url, "127.0.0.1", "6003"), url);
  EXPECT_EQ(WithHostLast(url, "10.0.0.1", "6001"), url);
  EXPECT_EQ(WithHostLast("postgresql://u@h:5/db", "h", "5"), "postgresql://u@h:5/db");
  // No user, no path; hosts without ports; IPv6 in brackets.
  EXPECT_EQ(WithHostLast("postgres://a,b", "a", "5432"), "postgres://b,a");
  EXPECT_EQ(WithHostLast("postgres://[::1]:1,[::1]:2/d", "::1", "1"),
            "postgres://[::1]:2,[::1]:1/d");
  // A keyword=value string is left as it is.
  EXPECT_EQ(WithHostLast("host=a,b port=1,2", "a", "1"), "host=a,b port=1,2");
}

}  // namespace
}  // namespace skiff::store::internal
