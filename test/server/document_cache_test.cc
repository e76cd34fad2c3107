// DocumentCache reads a key that is not in memory with its shard's lock let
// go: a store read that hangs stalls only the caller that asked for it,
// never another key of the same shard (an I/O thread reading a resident
// document must not wait for a store worker's read), and a read that raced
// with a write, or with a write and an eviction, never puts an older copy
// in memory. The store is a real memory store behind a wrapper whose Get of
// one key waits until the test lets it go.
#include "server/internal/document_cache.h"

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <variant>

#include <gtest/gtest.h>

#include "base/clock.h"
#include "store/store.h"
#include "store/write_batch.h"

#include "test/status_matchers.h"

namespace skiff::server::internal {
namespace {

using std::chrono::seconds;

// Get(table, held) waits, once, until Release(); the text it returns is
// the store's at the moment the Get began.
class GatedStore final : public store::StoreWrapper {
 public:
  GatedStore(store::Store& target, std::string held) : StoreWrapper(target), held_(held) {}

  Result<std::optional<std::string>> Get(std::string_view table, std::string_view key) override {
    Result<std::optional<std::string>> text = StoreWrapper::Get(table, key);
    std::unique_lock lock(mu_);
    if (key == held_ && !passed_) {
      waiting_ = true;
      cv_.notify_all();
      cv_.wait(lock, [&] { return released_; });
      passed_ = true;
    }
    return text;
  }
  // True once a Get of the held key is waiting (up to 60 s).
  bool AwaitWaiting() {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, seconds(60), [&] { return waiting_; });
  }
  void Release() {
    std::lock_guard lock(mu_);
    released_ = true;
    cv_.notify_all();
  }

 private:
  const std::string held_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool waiting_ = false;
  bool released_ = false;
  bool passed_ = false;
};

Status Put(store::Store& store, const std::string& key, const std::string& value) {
  store::WriteBatch batch;
  batch.Put("t", key, value);
  return store.Write(batch);
}

// The text of (t, key) in memory as Access(kLoad) sees it.
std::string Read(DocumentCache& cache, const std::string& key) {
  std::string text;
  EXPECT_OK(cache.Access("t", key, AccessMode::kLoad, [&](CachedDocument& doc) {
    text = doc.exists() ? std::get<TreeForm>(doc.form).tree.dump() : "absent";
  }));
  return text;
}

// What a set does to the cache: the document replaced, whatever it was.
Status SetInMemory(DocumentCache& cache, const std::string& key, const std::string& json) {
  return cache.Access("t", key, AccessMode::kReplace, [&](CachedDocument& doc) {
    doc.form = TreeForm{doc::Value::parse(json), json.size()};
  });
}

class DocumentCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<std::unique_ptr<store::Store>> memory = store::OpenStore("memory:");
    ASSERT_OK(memory);
    memory_ = std::move(*memory);
  }

  std::unique_ptr<store::Store> memory_;
  ManualClock clock_;
};

TEST_F(DocumentCacheTest, AHangingStoreReadDoesNotHoldItsShard) {
  ASSERT_OK(Put(*memory_, "slow", R"({"v":1})"));
  ASSERT_OK(Put(*memory_, "near", R"({"v":2})"));
  GatedStore gated(*memory_, "slow");
  DocumentCache cache(gated, clock_, /*shard_count=*/1);  // every key in one shard
  EXPECT_EQ(Read(cache, "near"), R"({"v":2})");           // resident from now on
  std::thread loader([&] { EXPECT_EQ(Read(cache, "slow"), R"({"v":1})"); });
  ASSERT_TRUE(gated.AwaitWaiting());
  // The store read of "slow" is stuck; "near", in the same shard, is read
  // from memory meanwhile (before the change this waited for the release,
  // so the test hung until its ctest timeout).
  bool resident = false;
  std::string near;
  ASSERT_OK(cache.Access(
      "t", "near", AccessMode::kResidentOnly,
      [&](CachedDocument& doc) { near = std::get<TreeForm>(doc.form).tree.dump(); }, &resident));
  EXPECT_TRUE(resident);
  EXPECT_EQ(near, R"({"v":2})");
  gated.Release();
  loader.join();
}

TEST_F(DocumentCacheTest, AWriteDuringTheReadWins) {
  ASSERT_OK(Put(*memory_, "k", R"({"v":"old"})"));
  GatedStore gated(*memory_, "k");
  DocumentCache cache(gated, clock_, 4);
  std::string loaded;
  std::thread loader([&] { loaded = Read(cache, "k"); });
  ASSERT_TRUE(gated.AwaitWaiting());  // it has read {"v":"old"} and waits
  // A set replaces the document meanwhile.
  ASSERT_OK(SetInMemory(cache, "k", R"({"v":"new"})"));
  gated.Release();
  loader.join();
  EXPECT_EQ(loaded, R"({"v":"new"})");
  EXPECT_EQ(Read(cache, "k"), R"({"v":"new"})");
}

TEST_F(DocumentCacheTest, AWriteAndAnEvictionDuringTheReadMakeItReadAgain) {
  ASSERT_OK(Put(*memory_, "k", R"({"v":"old"})"));
  GatedStore gated(*memory_, "k");
  DocumentCache cache(gated, clock_, 1);
  std::string loaded;
  std::thread loader([&] { loaded = Read(cache, "k"); });
  ASSERT_TRUE(gated.AwaitWaiting());  // holding the text {"v":"old"}
  // Meanwhile the key is written (through to the store, as a commit does)
  // and evicted again: only the store has the new value now.
  ASSERT_OK(SetInMemory(cache, "k", R"({"v":"new"})"));
  ASSERT_OK(Put(*memory_, "k", R"({"v":"new"})"));
  clock_.Advance(seconds(10));
  cache.Sweep(std::chrono::nanoseconds(0), seconds(1), /*written_through=*/UINT64_MAX);
  ASSERT_EQ(cache.stats().evictions, 1u);
  gated.Release();
  loader.join();
  // The stale text was not kept: the read was made again.
  EXPECT_EQ(loaded, R"({"v":"new"})");
}

// What a set leaves: the document as compact text.
Status SetText(DocumentCache& cache, const std::string& key, const std::string& json) {
  return cache.Access("t", key, AccessMode::kReplace,
                      [&](CachedDocument& doc) { doc.form = TextForm{json}; });
}

// A ~300-byte document of one made-up schema, different for every `i`.
std::string Profile(int i) {
  return R"({"id":)" + std::to_string(i) + R"(,"name":"user-)" + std::to_string(i * 7919 % 100003) +
         R"(","age":)" + std::to_string(18 + i % 70) + R"(,"city":")" +
         (i % 3 == 0   ? "Lisbon"
          : i % 3 == 1 ? "Osaka"
                       : "Quito") +
         R"(","prefs":{"theme":")" + (i % 2 == 0 ? "dark" : "light") +
         R"(","lang":"pt","notify":true},"scores":[)" + std::to_string(i % 97) + "," +
         std::to_string(i % 89) + "," + std::to_string(i % 83) + R"(],"bio":"member since )" +
         std::to_string(2000 + i % 25) + R"( and counting","active":)" +
         (i % 5 == 0 ? "false" : "true") + "}";
}

// Packing a text-form document packs its text: no tree on the way, and a
// read gets the very same text back in the text form.
TEST_F(DocumentCacheTest, TextIsPackedAsTextAndReadBackAsText) {
  DocumentCache cache(*memory_, clock_, 4);
  const std::string json = Profile(1);
  ASSERT_OK(SetText(cache, "k", json));
  clock_.Advance(seconds(10));
  cache.Sweep(seconds(1), std::chrono::nanoseconds(0), /*written_through=*/UINT64_MAX);
  ASSERT_EQ(cache.stats().packed.documents, 1u);
  ASSERT_EQ(cache.stats().hot.documents, 0u);
  EXPECT_LT(cache.stats().packed.bytes, json.size());
  std::string read;
  ASSERT_OK(cache.Access("t", "k", AccessMode::kLoad, [&](CachedDocument& doc) {
    ASSERT_TRUE(std::holds_alternative<TextForm>(doc.form));
    read = std::get<TextForm>(doc.form).json;
  }));
  EXPECT_EQ(read, json);
  EXPECT_EQ(cache.stats().hot.documents, 1u);
  EXPECT_EQ(cache.stats().hot.bytes, json.size());
}

// Once a sweep has packed enough documents of a table, the table gets a
// dictionary: documents packed from then on are much smaller, and every
// document, packed with it or before it, reads back exactly.
TEST_F(DocumentCacheTest, ATableWithManyDocumentsGetsADictionary) {
  DocumentCache cache(*memory_, clock_, 8);
  constexpr int kFirst = static_cast<int>(PackDictionaries::kSamples);
  for (int i = 0; i < kFirst; ++i) ASSERT_OK(SetText(cache, std::to_string(i), Profile(i)));
  clock_.Advance(seconds(10));
  cache.Sweep(seconds(1), std::chrono::nanoseconds(0), UINT64_MAX);
  ASSERT_EQ(cache.stats().packed.documents, static_cast<uint64_t>(kFirst));
  const uint64_t first_bytes = cache.stats().packed.bytes;
  const double before = static_cast<double>(first_bytes) / kFirst;
  constexpr int kLater = 200;
  for (int i = kFirst; i < kFirst + kLater; ++i) {
    ASSERT_OK(SetText(cache, std::to_string(i), Profile(i)));
  }
  clock_.Advance(seconds(10));
  cache.Sweep(seconds(1), std::chrono::nanoseconds(0), UINT64_MAX);
  ASSERT_EQ(cache.stats().packed.documents, static_cast<uint64_t>(kFirst + kLater));
  const double after = static_cast<double>(cache.stats().packed.bytes - first_bytes) / kLater;
  EXPECT_LT(after, before * 0.75) << before << " bytes a document before, " << after << " after";
  for (int i = 0; i < kFirst + kLater; i += 7) {
    std::string read;
    ASSERT_OK(cache.Access("t", std::to_string(i), AccessMode::kLoad,
                           [&](CachedDocument& doc) { read = std::get<TextForm>(doc.form).json; }));
    ASSERT_EQ(read, Profile(i));
  }
}

}  // namespace
}  // namespace skiff::server::internal
