// One conformance suite over every DeviceStorage (memory, SQLite, LMDB):
// rows, outbox and position round-trip through Load, in name order, with
// names of any bytes and rows of any size; file storages keep it all across
// a reopen, and a write that fails leaves nothing behind.
#include <algorithm>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "test/client/storage_under_test.h"
#include "test/status_matchers.h"

namespace skiff::testing {
namespace {

using client::OutboxEntry;
using client::RowName;
using client::RowWrite;
using client::StoredState;
using client::SyncPosition;
using namespace std::string_literals;

using Model = std::map<RowName, std::string>;

// A name with its bytes outside printable ASCII escaped, cut at 120 bytes
// (then with its key's length).
std::string Printable(const RowName& n) {
  constexpr const char* kHex = "0123456789abcdef";
  std::string out;
  for (const std::string* part : {&n.group, &n.table, &n.key}) {
    if (part != &n.group) out += " | ";
    for (unsigned char c : *part) {
      if (c >= 0x20 && c < 0x7f) {
        out.push_back(static_cast<char>(c));
      } else {
        out += {'\\', 'x', kHex[c >> 4], kHex[c & 15]};
      }
    }
  }
  if (out.size() <= 120) return out;
  return out.substr(0, 120) + "... (key of " + std::to_string(n.key.size()) + " bytes)";
}

class DeviceStorageTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { ASSERT_OK(storage_.Reopen()); }

  StoredState LoadOk() {
    Result<StoredState> state = storage_->Load();
    EXPECT_OK(state);
    return state.ok() ? std::move(*state) : StoredState{};
  }

  // Load gives exactly `model`'s rows, in its (name) order.
  void ExpectRows(const Model& model) {
    StoredState state = LoadOk();
    ASSERT_EQ(state.rows.size(), model.size());
    size_t i = 0;
    for (const auto& [name, value] : model) {
      ASSERT_EQ(state.rows[i].name, name)
          << "row " << i << ": " << Printable(state.rows[i].name) << " vs " << Printable(name);
      ASSERT_EQ(state.rows[i].value, value) << Printable(name);
      ++i;
    }
  }

  // Applies `rows` to the storage and to `model`.
  void Apply(Model& model, const std::vector<RowWrite>& rows, const SyncPosition& position = {}) {
    ASSERT_OK(storage_->ApplyRemote(rows, position));
    for (const RowWrite& w : rows) {
      if (w.value) {
        model[w.name] = *w.value;
      } else {
        model.erase(w.name);
      }
    }
  }

  // For a file storage, closes and reopens it (checking it then holds
  // `model`); nothing for memory.
  void ReopenAndExpect(const Model& model) {
    if (!storage_.persistent()) return;
    ASSERT_OK(storage_.Reopen());
    ExpectRows(model);
  }

  StorageUnderTest storage_{GetParam()};
};

TEST_P(DeviceStorageTest, ANewStorageLoadsEmpty) {
  StoredState state = LoadOk();
  EXPECT_TRUE(state.rows.empty());
  EXPECT_TRUE(state.outbox.empty());
  EXPECT_EQ(state.position.cursor, 0u);
  EXPECT_FALSE(state.position.bootstrapped);
  EXPECT_FALSE(state.position.bootstrap_after.has_value());
  EXPECT_EQ(state.position.bootstrap_cursor, 0u);
  EXPECT_EQ(state.last_seq, 0u);
}

TEST_P(DeviceStorageTest, WriteLocalSetsTheRowAndAppendsToTheOutbox) {
  ASSERT_OK(storage_->WriteLocal({1, {"g", "t", "a"}, R"({"v":1})"}));
  ASSERT_OK(storage_->WriteLocal({2, {"g", "t", "b"}, "\"two\""}));
  ASSERT_OK(storage_->WriteLocal({3, {"g", "t", "a"}, std::nullopt}));
  ASSERT_OK(storage_->WriteLocal({4, {"g", "t", "b"}, "2"}));
  StoredState state = LoadOk();
  ASSERT_EQ(state.rows.size(), 1u);
  EXPECT_EQ(state.rows[0].name, (RowName{"g", "t", "b"}));
  EXPECT_EQ(state.rows[0].value, "2");
  ASSERT_EQ(state.outbox.size(), 4u);
  for (uint64_t i = 0; i < 4; ++i) EXPECT_EQ(state.outbox[i].seq, i + 1);
  EXPECT_EQ(state.outbox[0].name, (RowName{"g", "t", "a"}));
  EXPECT_EQ(state.outbox[0].value, R"({"v":1})");
  EXPECT_FALSE(state.outbox[2].value.has_value());
  EXPECT_EQ(state.outbox[3].value, "2");
  EXPECT_EQ(state.last_seq, 4u);
}

TEST_P(DeviceStorageTest, TheOutboxLoadsInSeqOrderPastByteBoundaries) {
  // 255 and 256 differ in their low byte's order: a key of the seq written
  // little-endian or as text would load them out of order.
  for (uint64_t seq : {1ull, 9ull, 10ull, 255ull, 256ull, 65536ull, 1ull << 40}) {
    ASSERT_OK(storage_->WriteLocal({seq, {"g", "t", std::to_string(seq)}, "0"}));
  }
  StoredState state = LoadOk();
  std::vector<uint64_t> seqs;
  for (const OutboxEntry& e : state.outbox) seqs.push_back(e.seq);
  EXPECT_EQ(seqs, (std::vector<uint64_t>{1, 9, 10, 255, 256, 65536, 1ull << 40}));
  EXPECT_EQ(state.last_seq, 1ull << 40);
}

TEST_P(DeviceStorageTest, ApplyRemoteSetsDeletesAndRecordsThePosition) {
  Model model;
  SyncPosition mid{5, false, RowName{"g", "t", "k2"}, 3};
  Apply(model, {{{"g", "t", "k1"}, "1"}, {{"g", "t", "k2"}, "2"}, {{"g", "t", "k3"}, "3"}}, mid);
  ExpectRows(model);
  StoredState state = LoadOk();
  EXPECT_EQ(state.position.cursor, 5u);
  EXPECT_FALSE(state.position.bootstrapped);
  EXPECT_EQ(state.position.bootstrap_after, (RowName{"g", "t", "k2"}));
  EXPECT_EQ(state.position.bootstrap_cursor, 3u);

  SyncPosition done{9, true, std::nullopt, 3};
  Apply(model, {{{"g", "t", "k2"}, std::nullopt}, {{"g", "t", "k3"}, "\"three\""}}, done);
  // Deleting a row that is not there is no error.
  Apply(model, {{{"g", "t", "never"}, std::nullopt}}, done);
  ExpectRows(model);
  state = LoadOk();
  EXPECT_EQ(state.position.cursor, 9u);
  EXPECT_TRUE(state.position.bootstrapped);
  EXPECT_FALSE(state.position.bootstrap_after.has_value());
  EXPECT_EQ(state.last_seq, 0u);  // remote rows hand out no seq
  EXPECT_TRUE(state.outbox.empty());

  // An empty page still moves the position.
  ASSERT_OK(storage_->ApplyRemote({}, {12, true, std::nullopt, 3}));
  EXPECT_EQ(LoadOk().position.cursor, 12u);
}

TEST_P(DeviceStorageTest, RowsLoadInNameOrderWhateverTheWriteOrder) {
  std::vector<RowWrite> page;
  for (const char* g : {"b", "a", "ab"}) {
    for (const char* t : {"y", "x"}) {
      for (int k : {10, 9, 100, 1}) page.push_back({{g, t, "k" + std::to_string(k)}, "0"});
    }
  }
  std::shuffle(page.begin(), page.end(), std::mt19937(7));
  Model model;
  Apply(model, page);
  ExpectRows(model);
}

TEST_P(DeviceStorageTest, AcknowledgeDropsEntriesUpToTheSeqOnly) {
  for (uint64_t seq = 1; seq <= 6; ++seq) {
    ASSERT_OK(storage_->WriteLocal({seq, {"g", "t", "k" + std::to_string(seq)}, "1"}));
  }
  ASSERT_OK(storage_->Acknowledge(3));
  StoredState state = LoadOk();
  ASSERT_EQ(state.outbox.size(), 3u);
  EXPECT_EQ(state.outbox[0].seq, 4u);
  EXPECT_EQ(state.outbox[2].seq, 6u);
  EXPECT_EQ(state.rows.size(), 6u);     // acknowledging keeps the rows
  ASSERT_OK(storage_->Acknowledge(3));  // again: nothing more to drop
  EXPECT_EQ(LoadOk().outbox.size(), 3u);
  ASSERT_OK(storage_->Acknowledge(100));
  state = LoadOk();
  EXPECT_TRUE(state.outbox.empty());
  // The highest seq is kept apart from the outbox, so a reopened device
  // never hands out a seq again.
  EXPECT_EQ(state.last_seq, 6u);
  if (storage_.persistent()) {
    ASSERT_OK(storage_.Reopen());
    EXPECT_EQ(LoadOk().last_seq, 6u);
  }
}

TEST_P(DeviceStorageTest, NamesWithSeparatorBytesStayApartAndInOrder) {
  // Names a key built by joining the parts with a separator (or ending
  // each at a NUL) would merge or misorder.
  const std::vector<RowName> names = {
      {"", "t", "k"},      {"g", "", "k"},      {"g", "t", ""},         {"a", "b\0c"s, "k"},
      {"a\0b"s, "c", "k"}, {"a", "b", "c\0"s},  {"a", "b", "c"},        {"a", "b", "c\0\x01"s},
      {"a", "b", "c\x01"}, {"a", "b", "c\xff"}, {"a", "b", "c\0\xff"s}, {"a", "b\0"s, "c"},
      {"a\0"s, "b", "c"},  {"a\x01", "b", "c"}, {"a/b", "c", "d"},      {"a", "b/c", "d"},
      {"a", "b", "\0"s},   {"a", "b", "\0\0"s}, {"a", "b\x01", "c"},    {"a", "b", "c/d"},
      {"a\xff", "", ""},
  };
  std::vector<RowWrite> page;
  for (size_t i = 0; i < names.size(); ++i) page.push_back({names[i], std::to_string(i)});
  std::shuffle(page.begin(), page.end(), std::mt19937(1));
  Model model;
  Apply(model, page);
  ASSERT_EQ(model.size(), names.size());
  ExpectRows(model);
  // Deleting one touches no look-alike.
  Apply(model, {{{"a", "b", "c"}, std::nullopt}, {{"a\0b"s, "c", "k"}, std::nullopt}});
  ExpectRows(model);
  // The outbox keeps such names too.
  ASSERT_OK(storage_->WriteLocal({1, {"a", "b\0c"s, "\0"s}, "\"x\""}));
  model[{"a", "b\0c"s, "\0"s}] = "\"x\"";
  StoredState state = LoadOk();
  ASSERT_EQ(state.outbox.size(), 1u);
  EXPECT_EQ(state.outbox[0].name, (RowName{"a", "b\0c"s, "\0"s}));
  ReopenAndExpect(model);
}

TEST_P(DeviceStorageTest, LargeRowsAndLongKeysRoundTrip) {
  Model model;
  // A value of 1 MiB, and keys up to the protocol's 1 KiB: some around
  // LMDB's 511-byte key limit, many sharing a long prefix.
  std::string big = "\"" + std::string(1 << 20, 'v') + "\"";
  std::vector<RowWrite> page = {{{"g", "t", "big"}, big}};
  for (size_t n : {1u, 480u, 495u, 500u, 501u, 502u, 503u, 510u, 511u, 600u, 1000u, 1023u, 1024u}) {
    page.push_back({{"g", "t", std::string(n, 'k')}, std::to_string(n)});
    page.push_back({{"g", "t", std::string(n, 'k') + "a"}, "\"a" + std::to_string(n) + "\""});
  }
  for (int i = 0; i < 20; ++i) {
    page.push_back({{"g", "t", std::string(1000, 'p') + std::to_string(i)}, std::to_string(i)});
  }
  page.push_back({{"g", "u", std::string(1024, 'k')}, "\"other table\""});
  std::shuffle(page.begin(), page.end(), std::mt19937(3));
  Apply(model, page);
  ExpectRows(model);
  // Overwrite and delete among the long ones.
  Apply(model, {{{"g", "t", std::string(1024, 'k')}, "\"again\""},
                {{"g", "t", std::string(1000, 'p') + "7"}, std::nullopt},
                {{"g", "t", std::string(1000, 'p') + "77"}, std::nullopt},
                {{"g", "t", std::string(502, 'k')}, std::nullopt}});
  ASSERT_OK(storage_->WriteLocal({1, {"g", "t", std::string(1024, 'w')}, big}));
  model[{"g", "t", std::string(1024, 'w')}] = big;
  ExpectRows(model);
  StoredState state = LoadOk();
  ASSERT_EQ(state.outbox.size(), 1u);
  EXPECT_EQ(state.outbox[0].value, big);
  ReopenAndExpect(model);
}

TEST_P(DeviceStorageTest, EverythingSurvivesAReopen) {
  Model model;
  Apply(model, {{{"g", "t", "r1"}, "1"}, {{"g", "t", "r2"}, "2"}},
        {7, false, RowName{"g", "t", "r2"}, 6});
  ASSERT_OK(storage_->WriteLocal({1, {"g", "t", "l1"}, "\"local\""}));
  ASSERT_OK(storage_->WriteLocal({2, {"g", "t", "r1"}, std::nullopt}));
  model[{"g", "t", "l1"}] = "\"local\"";
  model.erase({"g", "t", "r1"});
  if (storage_.persistent()) {
    ASSERT_OK(storage_.Reopen());
  }
  ExpectRows(model);
  StoredState state = LoadOk();
  ASSERT_EQ(state.outbox.size(), 2u);
  EXPECT_EQ(state.outbox[1].seq, 2u);
  EXPECT_FALSE(state.outbox[1].value.has_value());
  EXPECT_EQ(state.position.cursor, 7u);
  EXPECT_EQ(state.position.bootstrap_after, (RowName{"g", "t", "r2"}));
  EXPECT_EQ(state.position.bootstrap_cursor, 6u);
  EXPECT_EQ(state.last_seq, 2u);
}

TEST_P(DeviceStorageTest, AFailedWriteLeavesNothing) {
  if (!storage_.persistent()) GTEST_SKIP() << "memory cannot fail a write";
  ASSERT_OK(storage_->WriteLocal({1, {"g", "t", "a"}, "1"}));
  // A second entry with seq 1 fails at the outbox, after its row was
  // written inside the transaction: the row must be gone with it.
  Status s = storage_->WriteLocal({1, {"g", "t", "b"}, "2"});
  EXPECT_FALSE(s.ok());
  StoredState state = LoadOk();
  ASSERT_EQ(state.rows.size(), 1u);
  EXPECT_EQ(state.rows[0].name.key, "a");
  ASSERT_EQ(state.outbox.size(), 1u);
  EXPECT_EQ(state.outbox[0].name.key, "a");
  // The storage goes on working.
  ASSERT_OK(storage_->WriteLocal({2, {"g", "t", "b"}, "2"}));
  EXPECT_EQ(LoadOk().rows.size(), 2u);
}

TEST_P(DeviceStorageTest, LoadCountsItsReads) {
  std::vector<RowWrite> page;
  for (int i = 0; i < 50; ++i) page.push_back({{"g", "t", "k" + std::to_string(i)}, "0"});
  ASSERT_OK(storage_->ApplyRemote(page, {}));
  for (uint64_t seq = 1; seq <= 3; ++seq) {
    ASSERT_OK(storage_->WriteLocal({seq, {"g", "t", "l" + std::to_string(seq)}, "1"}));
  }
  const uint64_t before = storage_->statements();
  StoredState state = LoadOk();
  const uint64_t reads = storage_->statements() - before;
  ASSERT_EQ(state.rows.size(), 53u);
  // SQLite: rows, outbox, meta. LMDB: every cursor step (the meta, each
  // outbox entry, each row, the end). Memory runs none.
  const uint64_t expected = GetParam() == "sqlite" ? 3u : GetParam() == "lmdb" ? 53u + 3u + 2u : 0u;
  EXPECT_EQ(reads, expected);
}

INSTANTIATE_TEST_SUITE_P(Storages, DeviceStorageTest, ::testing::ValuesIn(StorageKinds()),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

}  // namespace
}  // namespace skiff::testing
