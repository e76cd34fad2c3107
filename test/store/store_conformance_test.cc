// One suite, every store: the behaviour the server relies on must be the same
// on memory, SQLite and PostgreSQL (the way SQLite's SLT runs one script on
// several engines).
#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include "store/store.h"

#include "test/store/store_test_util.h"

namespace skiff::store {
namespace {

using support::TestStore;

class StoreConformanceTest : public testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { test::OpenOrSkip(GetParam(), &fixture_); }
  Store& store() { return fixture_->store(); }

  std::optional<std::string> GetOrDie(std::string_view table, std::string_view key) {
    auto r = store().Get(table, key);
    EXPECT_OK(r);
    return r.ok() ? *r : std::nullopt;
  }

  std::vector<std::string> ScanAllKeys(std::string_view table, size_t page_size) {
    std::vector<std::string> keys;
    std::string after;
    for (int pages = 0; pages < 10000; ++pages) {
      auto page = store().Scan(table, after, page_size);
      EXPECT_OK(page);
      if (!page.ok()) break;
      EXPECT_LE(page->items.size(), page_size);
      for (auto& kv : page->items) keys.push_back(kv.key);
      if (!page->next) break;
      EXPECT_EQ(*page->next, page->items.back().key);
      after = *page->next;
    }
    return keys;
  }

  std::unique_ptr<TestStore> fixture_;
};

TEST_P(StoreConformanceTest, GetOfMissingKeyIsNotFound) {
  EXPECT_EQ(GetOrDie("docs", "nope"), std::nullopt);
}

TEST_P(StoreConformanceTest, PutThenGetReturnsTheValue) {
  ASSERT_OK(store().Put("docs", "a", R"({"x":1})"));
  EXPECT_EQ(GetOrDie("docs", "a"), R"({"x":1})");
}

TEST_P(StoreConformanceTest, PutReplacesAndDeleteRemoves) {
  ASSERT_OK(store().Put("docs", "a", "1"));
  ASSERT_OK(store().Put("docs", "a", "2"));
  EXPECT_EQ(GetOrDie("docs", "a"), "2");
  ASSERT_OK(store().Delete("docs", "a"));
  EXPECT_EQ(GetOrDie("docs", "a"), std::nullopt);
  EXPECT_OK(store().Delete("docs", "a"));  // deleting nothing is not an error
}

TEST_P(StoreConformanceTest, TablesAreSeparate) {
  ASSERT_OK(store().Put("one", "k", "1"));
  ASSERT_OK(store().Put("two", "k", "2"));
  EXPECT_EQ(GetOrDie("one", "k"), "1");
  EXPECT_EQ(GetOrDie("two", "k"), "2");
  EXPECT_EQ(ScanAllKeys("one", 10).size(), 1u);
}

TEST_P(StoreConformanceTest, BatchAppliesOpsInOrderLastWins) {
  ASSERT_OK(store().Put("docs", "gone", "0"));
  WriteBatch batch;
  batch.Put("docs", "a", "1");
  batch.Put("docs", "b", "1");
  batch.Put("docs", "a", "2");
  batch.Delete("docs", "b");
  batch.Delete("docs", "gone");
  batch.Delete("docs", "c");
  batch.Put("docs", "c", "3");
  ASSERT_OK(store().Write(batch));
  EXPECT_EQ(GetOrDie("docs", "a"), "2");
  EXPECT_EQ(GetOrDie("docs", "b"), std::nullopt);
  EXPECT_EQ(GetOrDie("docs", "gone"), std::nullopt);
  EXPECT_EQ(GetOrDie("docs", "c"), "3");
}

TEST_P(StoreConformanceTest, InvalidBatchAppliesNothing) {
  WriteBatch batch;
  batch.Put("docs", "fine", "1");
  batch.Put("bad table!", "k", "1");
  EXPECT_STATUS(store().Write(batch), kBadRequest);
  WriteBatch long_key;
  long_key.Put("docs", "fine", "1");
  long_key.Put("docs", std::string(1025, 'k'), "1");
  EXPECT_STATUS(store().Write(long_key), kTooLarge);
  EXPECT_EQ(GetOrDie("docs", "fine"), std::nullopt);
}

TEST_P(StoreConformanceTest, RejectsBadNamesEverywhere) {
  EXPECT_STATUS(store().Get("", "k"), kBadRequest);
  EXPECT_STATUS(store().Get("a b", "k"), kBadRequest);
  EXPECT_STATUS(store().Get(std::string(65, 't'), "k"), kBadRequest);
  EXPECT_STATUS(store().Get("docs", ""), kBadRequest);
  EXPECT_STATUS(store().Get("docs", "\xC3\x28"), kBadRequest);  // invalid UTF-8
  EXPECT_STATUS(store().Put("docs'; DROP TABLE x; --", "k", "1"), kBadRequest);
  EXPECT_STATUS(store().Scan("docs", "", 0), kBadRequest);
  EXPECT_STATUS(store().Scan("docs", "", kMaxScanLimit + 1), kBadRequest);
}

TEST_P(StoreConformanceTest, NulBytesNeverNameAnotherKey) {
  ASSERT_OK(store().Put("docs", "victim", "\"original\""));
  EXPECT_STATUS(store().Put("docs", std::string("victim\0x", 8), "\"overwritten\""), kBadRequest);
  EXPECT_STATUS(store().Put("docs", "other", std::string("\"a\0b\"", 5)), kBadRequest);
  EXPECT_STATUS(store().Get("docs", std::string("victim\0", 7)), kBadRequest);
  EXPECT_EQ(GetOrDie("docs", "victim"), "\"original\"");
  EXPECT_EQ(GetOrDie("docs", "other"), std::nullopt);
}

TEST_P(StoreConformanceTest, SystemTablesAreAccepted) {
  ASSERT_OK(store().Put("$users", "alice", R"({"salt":"x"})"));
  EXPECT_EQ(GetOrDie("$users", "alice"), R"({"salt":"x"})");
  EXPECT_STATUS(store().Get("$", "k"), kBadRequest);
}

TEST_P(StoreConformanceTest, KeysThatLookLikeSqlAreJustKeys) {
  const std::string key = "x' OR '1'='1";
  ASSERT_OK(store().Put("docs", key, "1"));
  EXPECT_EQ(GetOrDie("docs", key), "1");
  EXPECT_EQ(GetOrDie("docs", "x"), std::nullopt);
}

TEST_P(StoreConformanceTest, ScanPagesAcrossBoundariesInKeyOrder) {
  WriteBatch batch;
  std::vector<std::string> expected;
  for (int i = 0; i < 2500; ++i) {
    char key[16];
    snprintf(key, sizeof key, "k%05d", i);
    expected.push_back(key);
    batch.Put("scan", key, std::to_string(i));
  }
  ASSERT_OK(store().Write(batch));
  EXPECT_EQ(ScanAllKeys("scan", 1000), expected);
  EXPECT_EQ(ScanAllKeys("scan", 7), expected);

  // A table whose size is an exact multiple of the page: no empty last page.
  auto first = store().Scan("scan", "", 2500);
  ASSERT_OK(first);
  EXPECT_EQ(first->items.size(), 2500u);
  EXPECT_EQ(first->next, std::nullopt);
  auto past = store().Scan("scan", "k99999", 10);
  ASSERT_OK(past);
  EXPECT_TRUE(past->items.empty());
  EXPECT_EQ(past->next, std::nullopt);
  auto middle = store().Scan("scan", "k01000", 2);
  ASSERT_OK(middle);
  ASSERT_EQ(middle->items.size(), 2u);
  EXPECT_EQ(middle->items[0], (KeyValue{"k01001", "1001"}));
}

TEST_P(StoreConformanceTest, UnicodeKeysRoundTripAndOrderByBytes) {
  const std::vector<std::string> keys = {
      "z", "a", "\xC3\xA9t\xC3\xA9", "\xE6\x97\xA5\xE6\x9C\xAC", "\xF0\x9F\x98\x80", "A", "~"};
  for (const auto& k : keys) ASSERT_OK(store().Put("uni", k, "\"" + k + "\""));
  for (const auto& k : keys) EXPECT_EQ(GetOrDie("uni", k), "\"" + k + "\"");
  std::vector<std::string> sorted = keys;
  std::sort(sorted.begin(), sorted.end());  // std::string compares bytes as unsigned
  EXPECT_EQ(ScanAllKeys("uni", 3), sorted);
}

TEST_P(StoreConformanceTest, LargeDocumentsRoundTrip) {
  std::string big = "\"";
  for (int i = 0; big.size() < 4 * 1024 * 1024; ++i) big += "0123456789abcdef\\n\\\"\xC3\xA9";
  big += "\"";
  ASSERT_OK(store().Put("docs", "big", big));
  EXPECT_EQ(GetOrDie("docs", "big"), big);
}

TEST_P(StoreConformanceTest, ConcurrentWritersLoseNothing) {
  constexpr int kThreads = 8, kPerThread = 100;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        EXPECT_OK(store().Put("conc", std::to_string(t) + "-" + std::to_string(i), "1"));
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ScanAllKeys("conc", 1000).size(), size_t{kThreads * kPerThread});
}

TEST_P(StoreConformanceTest, ReopenedStoreKeepsItsData) {
  if (GetParam() == "memory") GTEST_SKIP() << "memory: keeps nothing by design";
  ASSERT_OK(store().Put("docs", "kept", "42"));
  fixture_->Close();
  auto reopened = OpenStore(fixture_->url());
  ASSERT_OK(reopened);
  auto value = (*reopened)->Get("docs", "kept");
  ASSERT_OK(value);
  EXPECT_EQ(*value, "42");
}

TEST_P(StoreConformanceTest, CountsStatementsItSends) {
  const StoreCounters before = store().counters();
  ASSERT_OK(store().Put("docs", "a", "1"));
  WriteBatch batch;
  for (int i = 0; i < 3; ++i) batch.Put("docs", "b" + std::to_string(i), "1");
  ASSERT_OK(store().Write(batch));
  ASSERT_OK(store().Get("docs", "a"));
  const StoreCounters after = store().counters();
  EXPECT_EQ(after.transactions - before.transactions, 2u);
  // Single put (1) + batch + get (1). The batch is BEGIN, 3 puts, COMMIT on
  // SQLite and one set-wise statement on PostgreSQL.
  const uint64_t expected = GetParam() == "memory"   ? 0
                            : GetParam() == "sqlite" ? 1 + 5 + 1
                                                     : 1 + 1 + 1;
  EXPECT_EQ(after.statements - before.statements, expected);
}

INSTANTIATE_TEST_SUITE_P(AllStores, StoreConformanceTest,
                         testing::Values("memory", "sqlite", "postgres"),
                         [](const auto& param_info) { return param_info.param; });

}  // namespace
}  // namespace skiff::store
