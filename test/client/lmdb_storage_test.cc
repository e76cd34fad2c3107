// LmdbStorage beyond the conformance suite (device_storage_test.cc): map
// growth and a full map, files that are not a device storage or are
// damaged (malformed keys, a false key count), long names sharing a cut
// key, paths that cannot be opened, Close, and flushing every commit.
#include "client/lmdb_storage.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <lmdb.h>
#include <openssl/evp.h>

#include "client/internal/lmdb_format.h"
#include "client/sqlite_storage.h"
#include "support/temp_dir.h"

#include "test/status_matchers.h"

namespace skiff::testing {
namespace {

using client::LmdbStorage;
using client::LmdbStorageOptions;
using client::RowName;
using client::RowWrite;
using client::StoredRow;
using client::StoredState;
using namespace std::string_literals;

bool Mentions(const Status& s, const std::string& text) {
  return s.message().find(text) != std::string::npos;
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

// An LMDB file of another program: one key in its main database (added to
// the file when it exists).
void WriteForeignLmdb(const std::string& path, const std::string& key, const std::string& value) {
  MDB_env* env = nullptr;
  ASSERT_EQ(mdb_env_create(&env), MDB_SUCCESS);
  ASSERT_EQ(mdb_env_open(env, path.c_str(), MDB_NOSUBDIR, 0644), MDB_SUCCESS);
  MDB_txn* txn = nullptr;
  MDB_dbi dbi = 0;
  ASSERT_EQ(mdb_txn_begin(env, nullptr, 0, &txn), MDB_SUCCESS);
  ASSERT_EQ(mdb_dbi_open(txn, nullptr, 0, &dbi), MDB_SUCCESS);
  MDB_val k{key.size(), const_cast<char*>(key.data())};
  MDB_val v{value.size(), const_cast<char*>(value.data())};
  ASSERT_EQ(mdb_put(txn, dbi, &k, &v, 0), MDB_SUCCESS);
  ASSERT_EQ(mdb_txn_commit(txn), MDB_SUCCESS);
  mdb_env_close(env);
}

TEST(LmdbStorage, AFullMapAtItsCapFailsTheWriteAndChangesNothing) {
  support::TempDir dir;
  const std::string path = dir.File("device.db");
  LmdbStorageOptions options;
  options.map_size = 1 << 20;
  options.max_map_size = 1 << 20;  // no room to grow
  auto opened = LmdbStorage::Open(path, options);
  ASSERT_OK(opened);
  LmdbStorage& storage = **opened;
  ASSERT_OK(storage.ApplyRemote({{{"g", "t", "a"}, "1"}}, {1, false, std::nullopt, 1}));
  ASSERT_OK(storage.WriteLocal({1, {"g", "t", "l"}, "2"}));

  // A page of 1.6 MB: the map fills part way through it.
  std::vector<RowWrite> page;
  for (int i = 0; i < 400; ++i) {
    page.push_back({{"g", "t", "p" + std::to_string(i)}, "\"" + std::string(4000, 'x') + "\""});
  }
  Status full = storage.ApplyRemote(page, {99, true, std::nullopt, 1});
  EXPECT_STATUS(full, kUnavailable);
  EXPECT_TRUE(Mentions(full, "full")) << full;
  EXPECT_TRUE(Mentions(full, path)) << full;
  EXPECT_TRUE(Mentions(full, std::to_string(1 << 20))) << full;  // the map's size
  // A local write of a row larger than the map.
  Status huge = storage.WriteLocal({2, {"g", "t", "huge"}, std::string(2 << 20, 'x')});
  EXPECT_STATUS(huge, kUnavailable);

  auto check = [&](LmdbStorage& s) {
    Result<StoredState> state = s.Load();
    ASSERT_OK(state);
    ASSERT_EQ(state->rows.size(), 2u);
    EXPECT_EQ(state->rows[0].name.key, "a");
    EXPECT_EQ(state->rows[1].name.key, "l");
    EXPECT_EQ(state->position.cursor, 1u);
    EXPECT_FALSE(state->position.bootstrapped);
    ASSERT_EQ(state->outbox.size(), 1u);
    EXPECT_EQ(state->last_seq, 1u);
  };
  check(storage);
  // Still usable, and the failed writes are not in the file either.
  ASSERT_OK(storage.WriteLocal({2, {"g", "t", "small"}, "3"}));
  ASSERT_OK(storage.Acknowledge(2));
  opened->reset();  // closes the file: LMDB opens a file once per process
  opened = LmdbStorage::Open(path, options);
  ASSERT_OK(opened);
  Result<StoredState> state = (*opened)->Load();
  ASSERT_OK(state);
  EXPECT_EQ(state->rows.size(), 3u);
  EXPECT_TRUE(state->outbox.empty());
  EXPECT_EQ(state->last_seq, 2u);
}

TEST(LmdbStorage, OpenRefusesFilesThatAreNotLmdb) {
  support::TempDir dir;
  std::mt19937 random(5);
  std::string noise(16384, '\0');
  for (char& c : noise) c = static_cast<char>(random());
  const std::vector<std::string> contents = {"hello\n", noise, std::string(8192, '\0') + "x"};
  for (size_t i = 0; i < contents.size(); ++i) {
    const std::string path = dir.File("not-lmdb-" + std::to_string(i));
    WriteFile(path, contents[i]);
    auto opened = LmdbStorage::Open(path);
    EXPECT_STATUS(opened, kInternal);
    EXPECT_TRUE(Mentions(opened.status(), path)) << opened.status();
  }
}

TEST(LmdbStorage, OpenRefusesASqliteStorage) {
  support::TempDir dir;
  const std::string path = dir.File("device.db");
  {
    auto sqlite = client::SqliteStorage::Open(path);
    ASSERT_OK(sqlite);
    ASSERT_OK((*sqlite)->WriteLocal({1, {"g", "t", "k"}, "1"}));
  }
  auto opened = LmdbStorage::Open(path);
  EXPECT_STATUS(opened, kInternal);
}

TEST(LmdbStorage, OpenRefusesAnLmdbFileOfAnotherProgram) {
  support::TempDir dir;
  WriteForeignLmdb(dir.File("other.db"), "hello", "world");
  auto other = LmdbStorage::Open(dir.File("other.db"));
  EXPECT_STATUS(other, kInternal);
  EXPECT_TRUE(Mentions(other.status(), "no meta")) << other.status();
  // A meta key that is not ours.
  WriteForeignLmdb(dir.File("meta.db"), "m", "not a device storage's meta");
  auto meta = LmdbStorage::Open(dir.File("meta.db"));
  EXPECT_STATUS(meta, kInternal);
  EXPECT_TRUE(Mentions(meta.status(), "meta")) << meta.status();
}

TEST(LmdbStorage, OpenRefusesACutOrOverwrittenFile) {
  support::TempDir dir;
  const std::string path = dir.File("device.db");
  {
    auto opened = LmdbStorage::Open(path);
    ASSERT_OK(opened);
    std::vector<RowWrite> page;
    for (int i = 0; i < 2000; ++i) page.push_back({{"g", "t", std::to_string(i)}, "0"});
    ASSERT_OK((*opened)->ApplyRemote(page, {}));
  }
  const auto size = std::filesystem::file_size(path);
  ASSERT_GT(size, 16384u);
  // Cut: the meta still counts the pages that are gone.
  std::filesystem::resize_file(path, size / 2);
  auto cut = LmdbStorage::Open(path);
  EXPECT_STATUS(cut, kInternal);
  EXPECT_TRUE(Mentions(cut.status(), "damaged")) << cut.status();
  // Both meta pages overwritten.
  {
    std::fstream f(path, std::ios::binary | std::ios::in | std::ios::out);
    std::string zeros(8192, '\x5a');
    f.write(zeros.data(), static_cast<std::streamsize>(zeros.size()));
    ASSERT_TRUE(f.good());
  }
  auto overwritten = LmdbStorage::Open(path);
  EXPECT_STATUS(overwritten, kInternal);
}

TEST(LmdbStorage, PathsThatCannotBeOpenedAreUnavailable) {
  support::TempDir dir;
  auto missing = LmdbStorage::Open(dir.File("no-such-dir/device.db"));
  EXPECT_STATUS(missing, kUnavailable);
  EXPECT_TRUE(Mentions(missing.status(), "no-such-dir")) << missing.status();
  std::filesystem::create_directory(dir.File("a-dir"));
  auto directory = LmdbStorage::Open(dir.File("a-dir"));
  EXPECT_STATUS(directory, kUnavailable);
}

// A device storage file holding one row, closed.
void WriteStorage(const std::string& path) {
  auto opened = LmdbStorage::Open(path);
  ASSERT_OK(opened);
  ASSERT_OK((*opened)->ApplyRemote({{{"g", "t", "a"}, "1"}}, {}));
  ASSERT_OK((*opened)->Close());
}

// The keys of an LMDB file, read with LMDB's own API.
std::vector<std::string> RawKeys(const std::string& path) {
  std::vector<std::string> keys;
  MDB_env* env = nullptr;
  EXPECT_EQ(mdb_env_create(&env), MDB_SUCCESS);
  EXPECT_EQ(mdb_env_open(env, path.c_str(), MDB_NOSUBDIR | MDB_RDONLY, 0644), MDB_SUCCESS);
  MDB_txn* txn = nullptr;
  MDB_dbi dbi = 0;
  MDB_cursor* cursor = nullptr;
  EXPECT_EQ(mdb_txn_begin(env, nullptr, MDB_RDONLY, &txn), MDB_SUCCESS);
  EXPECT_EQ(mdb_dbi_open(txn, nullptr, 0, &dbi), MDB_SUCCESS);
  EXPECT_EQ(mdb_cursor_open(txn, dbi, &cursor), MDB_SUCCESS);
  MDB_val k, v;
  for (int rc = mdb_cursor_get(cursor, &k, &v, MDB_FIRST); rc == MDB_SUCCESS;
       rc = mdb_cursor_get(cursor, &k, &v, MDB_NEXT)) {
    keys.emplace_back(static_cast<const char*>(k.mv_data), k.mv_size);
  }
  mdb_cursor_close(cursor);
  mdb_txn_abort(txn);
  mdb_env_close(env);
  return keys;
}

TEST(LmdbStorage, AFullMapGrowsUpToItsCap) {
  support::TempDir dir;
  const std::string path = dir.File("device.db");
  LmdbStorageOptions options;
  options.map_size = 1 << 20;
  options.max_map_size = 64 << 20;
  auto opened = LmdbStorage::Open(path, options);
  ASSERT_OK(opened);
  // A page of 1.6 MB into a map of 1 MiB.
  std::vector<RowWrite> page;
  for (int i = 0; i < 400; ++i) {
    page.push_back({{"g", "t", "p" + std::to_string(1000 + i)}, std::string(4000, '7')});
  }
  ASSERT_OK((*opened)->ApplyRemote(page, {7, true, std::nullopt, 7}));
  // One local row larger than the map grown so far.
  ASSERT_OK((*opened)->WriteLocal({1, {"g", "t", "z"}, std::string(8 << 20, '8')}));
  ASSERT_OK((*opened)->Close());
  EXPECT_GT(std::filesystem::file_size(path), size_t{8} << 20);

  opened = LmdbStorage::Open(path, options);
  ASSERT_OK(opened);
  Result<StoredState> state = (*opened)->Load();
  ASSERT_OK(state);
  ASSERT_EQ(state->rows.size(), 401u);
  EXPECT_EQ(state->rows[0].name.key, "p1000");
  EXPECT_EQ(state->rows[400].value.size(), size_t{8} << 20);
  EXPECT_EQ(state->position.cursor, 7u);
}

TEST(LmdbStorage, AWriteLargerThanTheCapGrowsOnceThenFails) {
  support::TempDir dir;
  const std::string path = dir.File("device.db");
  LmdbStorageOptions options;
  options.map_size = 1 << 20;
  options.max_map_size = 2 << 20;
  auto opened = LmdbStorage::Open(path, options);
  ASSERT_OK(opened);
  ASSERT_OK((*opened)->ApplyRemote({{{"g", "t", "a"}, "1"}}, {1, false, std::nullopt, 1}));
  std::vector<RowWrite> page;
  for (int i = 0; i < 800; ++i) {
    page.push_back({{"g", "t", "p" + std::to_string(i)}, std::string(4000, 'x')});
  }
  Status full = (*opened)->ApplyRemote(page, {9, true, std::nullopt, 1});
  EXPECT_STATUS(full, kUnavailable);
  EXPECT_TRUE(Mentions(full, "full")) << full;
  EXPECT_TRUE(Mentions(full, "map of " + std::to_string(2 << 20))) << full;  // grew to the cap
  Result<StoredState> state = (*opened)->Load();
  ASSERT_OK(state);
  ASSERT_EQ(state->rows.size(), 1u);
  EXPECT_EQ(state->position.cursor, 1u);
}

TEST(LmdbStorage, OpenRefusesOptionsOutOfRange) {
  support::TempDir dir;
  LmdbStorageOptions options;
  options.map_size = 4 << 20;
  options.max_map_size = 2 << 20;
  EXPECT_STATUS(LmdbStorage::Open(dir.File("a.db"), options), kBadRequest);
  options = {};
  options.cut_key_hash_bytes = 33;
  EXPECT_STATUS(LmdbStorage::Open(dir.File("b.db"), options), kBadRequest);
}

TEST(LmdbStorage, LoadRefusesAFileThatCountsMoreKeysThanItHolds) {
  support::TempDir dir;
  const std::string path = dir.File("device.db");
  WriteStorage(path);  // 2 keys: the meta and a row
  size_t page_size = 0;
  {
    MDB_env* env = nullptr;
    ASSERT_EQ(mdb_env_create(&env), MDB_SUCCESS);
    ASSERT_EQ(mdb_env_open(env, path.c_str(), MDB_NOSUBDIR | MDB_RDONLY, 0644), MDB_SUCCESS);
    MDB_stat stat;
    ASSERT_EQ(mdb_env_stat(env, &stat), MDB_SUCCESS);
    page_size = stat.ms_psize;
    mdb_env_close(env);
  }
  // LMDB's two meta pages (pages 0 and 1) each hold the main database's
  // record, whose key count (md_entries) sits 120 bytes into the page on a
  // 64-bit build: a 16-byte page header, 24 bytes of meta fields, the free
  // database's 48-byte record, and 32 bytes into the main one.
  constexpr size_t kEntriesOffset = 120;
  std::fstream f(path, std::ios::binary | std::ios::in | std::ios::out);
  bool found = false;
  for (size_t page : {size_t{0}, page_size}) {
    uint64_t count = 0;
    f.seekg(static_cast<std::streamoff>(page + kEntriesOffset));
    f.read(reinterpret_cast<char*>(&count), sizeof count);
    found = found || count == 2;
    const uint64_t huge = uint64_t{1} << 62;
    f.seekp(static_cast<std::streamoff>(page + kEntriesOffset));
    f.write(reinterpret_cast<const char*>(&huge), sizeof huge);
  }
  f.close();
  ASSERT_TRUE(found) << "the key count is not where this test expects it";

  auto opened = LmdbStorage::Open(path);
  ASSERT_OK(opened);
  Result<StoredState> state = (*opened)->Load();
  EXPECT_STATUS(state, kInternal);
  EXPECT_TRUE(Mentions(state.status(), "counts " + std::to_string(uint64_t{1} << 62)))
      << state.status();
}

TEST(LmdbStorage, LoadRefusesMalformedRowKeys) {
  support::TempDir dir;
  const std::string long_key = "r" + std::string(client::internal::kMaxKeyBytes - 1, 'a');
  const std::vector<RowName> stray = {{"g", "t", std::string(600, 'k')}};
  std::string foreign_bucket;
  {
    std::vector<StoredRow> rows = {{stray[0], "1"}};
    foreign_bucket = client::internal::EncodeBucket(rows);
  }
  struct Case {
    std::string name, key, value;
  };
  const std::vector<Case> cases = {
      {"no parts", "r", "1"},
      {"two parts", "rg\0\x01t\0\x01"s, "1"},
      {"a bad escape", "rg\0\x02t\0\x01k\0\x01"s, "1"},
      {"bytes after the key", "rg\0\x01t\0\x01k\0\x01x"s, "1"},
      {"a key ending in NUL", "rg\0\x01t\0\x01k\0"s, "1"},
      {"a cut key whose value is no bucket", long_key, "1"},
      {"a cut key holding another name's row", long_key, foreign_bucket},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].name);
    const std::string path = dir.File("device-" + std::to_string(i) + ".db");
    WriteStorage(path);
    WriteForeignLmdb(path, cases[i].key, cases[i].value);  // added to our file
    auto opened = LmdbStorage::Open(path);
    ASSERT_OK(opened);
    Result<StoredState> state = (*opened)->Load();
    EXPECT_STATUS(state, kInternal);
    EXPECT_TRUE(Mentions(state.status(), "row")) << state.status();
    EXPECT_TRUE(Mentions(state.status(), path)) << state.status();
  }
}

TEST(LmdbStorage, LongKeysAreCutAtTheFormatsLengthWithASha256) {
  support::TempDir dir;
  const std::string path = dir.File("device.db");
  const std::string key(700, 'k');
  {
    auto opened = LmdbStorage::Open(path);
    ASSERT_OK(opened);
    ASSERT_OK((*opened)->ApplyRemote({{{"g", "t", key}, "1"}}, {}));
  }
  const std::string whole = "rg\0\x01t\0\x01"s + key + "\0\x01"s;
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int digest_size = 0;
  ASSERT_EQ(EVP_Digest(whole.data(), whole.size(), digest, &digest_size, EVP_sha256(), nullptr), 1);
  const std::string expected =
      whole.substr(0, 511 - 16) + std::string(reinterpret_cast<const char*>(digest), 16);
  const std::vector<std::string> keys = RawKeys(path);
  ASSERT_EQ(keys.size(), 2u);  // the meta and the row
  EXPECT_EQ(keys[0], "m");
  EXPECT_EQ(keys[1], expected);
}

TEST(LmdbStorage, LongNamesSharingACutKeyLiveSideBySide) {
  support::TempDir dir;
  const std::string path = dir.File("device.db");
  LmdbStorageOptions options;
  // No hash: every long key of one table that starts with the same 511
  // bytes shares its cut key, as two names with colliding hashes would.
  options.cut_key_hash_bytes = 0;
  const std::string stem(600, 's');
  const RowName a{"g", "t", stem + "a"}, b{"g", "t", stem + "b"}, c{"g", "t", stem + "c"};
  const StoredRow short_row{{"g", "t", "short"}, "0"};  // sorts before the long names
  auto opened = LmdbStorage::Open(path, options);
  ASSERT_OK(opened);
  LmdbStorage& storage = **opened;
  ASSERT_OK(storage.ApplyRemote({{b, "2"}, {a, "1"}}, {}));
  ASSERT_OK(storage.WriteLocal({1, c, "3"}));
  ASSERT_OK(storage.ApplyRemote({{b, "22"}, {short_row.name, short_row.value}}, {}));
  auto expect = [&](LmdbStorage& s, const std::vector<StoredRow>& rows) {
    Result<StoredState> state = s.Load();
    ASSERT_OK(state);
    ASSERT_EQ(state->rows.size(), rows.size());
    for (size_t i = 0; i < rows.size(); ++i) {
      EXPECT_EQ(state->rows[i].name, rows[i].name) << i;
      EXPECT_EQ(state->rows[i].value, rows[i].value) << i;
    }
  };
  expect(storage, {short_row, {a, "1"}, {b, "22"}, {c, "3"}});
  // Deleting one leaves the others; deleting a name the bucket lacks is a no-op.
  ASSERT_OK(storage.ApplyRemote({{b, std::nullopt}, {{"g", "t", stem + "x"}, std::nullopt}}, {}));
  expect(storage, {short_row, {a, "1"}, {c, "3"}});
  ASSERT_OK(storage.Close());
  // The meta, outbox entry 1, the short row and one bucket holding a and c.
  EXPECT_EQ(RawKeys(path).size(), 4u);

  opened = LmdbStorage::Open(path, options);
  ASSERT_OK(opened);
  expect(**opened, {short_row, {a, "1"}, {c, "3"}});
  ASSERT_OK((*opened)->WriteLocal({2, a, std::nullopt}));
  ASSERT_OK((*opened)->WriteLocal({3, c, std::nullopt}));
  expect(**opened, {short_row});
}

TEST(LmdbStorage, CloseFlushesOnceAndLetsTheFileBeOpenedAgain) {
  support::TempDir dir;
  const std::string path = dir.File("device.db");
  auto first = LmdbStorage::Open(path);
  ASSERT_OK(first);
  ASSERT_OK((*first)->WriteLocal({1, {"g", "t", "k"}, "1"}));
  ASSERT_OK((*first)->Close());
  ASSERT_OK((*first)->Close());  // again: nothing to do
  Status after = (*first)->WriteLocal({2, {"g", "t", "k"}, "2"});
  EXPECT_STATUS(after, kInternal);
  EXPECT_TRUE(Mentions(after, "closed")) << after;
  EXPECT_STATUS((*first)->Load(), kInternal);
  EXPECT_STATUS((*first)->Acknowledge(1), kInternal);
  EXPECT_FALSE((*first)->flushes_each_commit());
  // The first object still lives; its file is closed, so it opens again.
  auto second = LmdbStorage::Open(path);
  ASSERT_OK(second);
  Result<StoredState> state = (*second)->Load();
  ASSERT_OK(state);
  ASSERT_EQ(state->rows.size(), 1u);
  EXPECT_EQ(state->last_seq, 1u);
}

TEST(LmdbStorage, SyncEachCommitDecidesWhetherLmdbFlushesCommits) {
  support::TempDir dir;
  const std::string path = dir.File("device.db");
  LmdbStorageOptions options;
  options.sync_each_commit = true;
  {
    auto opened = LmdbStorage::Open(path, options);
    ASSERT_OK(opened);
    EXPECT_TRUE((*opened)->flushes_each_commit());
    ASSERT_OK((*opened)->WriteLocal({1, {"g", "t", "k"}, "1"}));
  }
  EXPECT_TRUE(std::filesystem::exists(path + "-lock"));
  auto reopened = LmdbStorage::Open(path);  // the default: flushed at close
  ASSERT_OK(reopened);
  EXPECT_FALSE((*reopened)->flushes_each_commit());
  Result<StoredState> state = (*reopened)->Load();
  ASSERT_OK(state);
  ASSERT_EQ(state->rows.size(), 1u);
  EXPECT_EQ(state->last_seq, 1u);
}

TEST(LmdbFormat, DecodersRefuseWhatTheEncodersDoNotWrite) {
  namespace f = client::internal;
  f::LmdbMeta meta;
  meta.position.bootstrapped = true;
  meta.position.bootstrap_after = RowName{"g", "t", "k"};
  std::string bytes = f::EncodeMeta(meta);
  f::LmdbMeta back;
  ASSERT_TRUE(f::DecodeMeta(bytes, back));
  EXPECT_EQ(back.position.bootstrap_after, meta.position.bootstrap_after);
  // A flag byte other than 0 or 1 (bootstrapped, after the magic, the
  // version and the cursor).
  bytes[std::strlen("skiff-device-lmdb") + 1 + 8] = 2;
  EXPECT_FALSE(f::DecodeMeta(bytes, back));
  EXPECT_FALSE(f::DecodeMeta(f::EncodeMeta(meta) + "x", back));

  client::OutboxEntry entry;
  EXPECT_FALSE(
      f::DecodeOutbox(f::OutboxKey(1) + "x", f::EncodeOutbox({1, {"g", "t", "k"}, "1"}), entry));
  EXPECT_FALSE(
      f::DecodeOutbox(f::OutboxKey(1), f::EncodeOutbox({1, {"g", "t", "k"}, {}}) + "x", entry));
  ASSERT_TRUE(f::DecodeOutbox(f::OutboxKey(5), f::EncodeOutbox({5, {"g", "t", "k"}, "v"}), entry));
  EXPECT_EQ(entry.seq, 5u);
  EXPECT_EQ(entry.value, "v");

  std::vector<StoredRow> rows;
  EXPECT_FALSE(f::DecodeBucket("", rows));
  const std::string two = f::EncodeBucket({{{"g", "t", "b"}, "2"}, {{"g", "t", "a"}, "1"}});
  EXPECT_FALSE(f::DecodeBucket(two, rows));  // out of order
  EXPECT_TRUE(rows.empty());
  const std::string one = f::EncodeBucket({{{"g", "t", "a"}, "1"}});
  EXPECT_FALSE(f::DecodeBucket(one.substr(0, one.size() - 1), rows));
  EXPECT_FALSE(f::DecodeBucket(one + one, rows));  // the same name twice
  ASSERT_TRUE(f::DecodeBucket(one, rows));
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].value, "1");
}

}  // namespace
}  // namespace skiff::testing
