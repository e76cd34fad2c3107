#include "client/lmdb_storage.h"

#include <algorithm>
#include <cerrno>
#include <exception>
#include <string_view>
#include <utility>

#include <lmdb.h>
#include <sys/stat.h>

#include "client/internal/lmdb_format.h"

namespace skiff::client {
namespace {

using internal::LmdbMeta;

static_assert(LmdbStorageOptions{}.cut_key_hash_bytes == internal::kHashBytes,
              "the default is format v1's hash length");
constexpr size_t kMaxHashBytes = 32;  // SHA-256
// A key's leaf node takes at least this much of a page (its header and
// slot, a key and a value byte): the most keys a file's pages can hold.
constexpr size_t kMinBytesPerKey = 16;

MDB_val Val(std::string_view s) { return {s.size(), const_cast<char*>(s.data())}; }
std::string_view View(const MDB_val& v) { return {static_cast<const char*>(v.mv_data), v.mv_size}; }

// LMDB maps the file and trusts its meta: a page past the end of a cut
// file would be a SIGBUS on first read, so a file shorter than the pages
// its meta counts is refused here.
Status CheckSize(MDB_env* env, const std::string& path) {
  MDB_envinfo info;
  MDB_stat stat;
  struct stat file;
  if (mdb_env_info(env, &info) != MDB_SUCCESS || mdb_env_stat(env, &stat) != MDB_SUCCESS ||
      ::stat(path.c_str(), &file) != 0) {
    return Unavailable("cannot read the size of device storage '" + path + "'");
  }
  const uint64_t needed = (uint64_t{info.me_last_pgno} + 1) * stat.ms_psize;
  if (static_cast<uint64_t>(file.st_size) < needed) {
    return Internal("device storage '" + path + "' is damaged: the file has " +
                    std::to_string(file.st_size) + " bytes where its pages need " +
                    std::to_string(needed));
  }
  return Status::Ok();
}

// The bytes a write of `name` and `value` adds at least: a hint for how
// far to grow a full map.
size_t BytesOf(const RowName& name, const std::optional<std::string>& value) {
  return 64 + name.group.size() + name.table.size() + name.key.size() + (value ? value->size() : 0);
}

// The format's length fields hold 32 bits.
Status CheckFits(const RowName& name, const std::optional<std::string>& value) {
  for (const std::string* part : {&name.group, &name.table, &name.key}) {
    if (part->size() > internal::kMaxFieldBytes) {
      return TooLarge("device storage: a row name part of " + std::to_string(part->size()) +
                      " bytes is over the format's limit");
    }
  }
  if (value && value->size() > internal::kMaxFieldBytes) {
    return TooLarge("device storage: a row of " + std::to_string(value->size()) +
                    " bytes is over the format's limit");
  }
  return Status::Ok();
}

// Runs `f`, turning an exception into internal: a damaged file can hold
// sizes that make an allocation fail, and no exception leaves the storage.
template <typename F>
auto NoThrow(const std::string& path, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const std::exception& e) {
    return Internal("device storage '" + path + "' failed (damaged?): " + e.what());
  }
}

}  // namespace

// The environment, its one database and the counted calls into LMDB.
class LmdbStorage::Env {
 public:
  Env(MDB_env* env, std::string path, const LmdbStorageOptions& options,
      std::atomic<uint64_t>& counter)
      : env_(env),
        path_(std::move(path)),
        max_map_(options.max_map_size),
        hash_bytes_(options.cut_key_hash_bytes),
        counter_(counter) {}
  ~Env() { mdb_env_close(env_); }

  LmdbMeta& meta() { return meta_; }
  MDB_env* raw() const { return env_; }

  // Flushes every commit to disk (a no-op when each was flushed already).
  Status Flush() {
    int rc = mdb_env_sync(env_, 1);
    return rc == MDB_SUCCESS ? Status::Ok() : Error(rc, "flush the file");
  }

  // The Status for LMDB's return code `rc` from `doing`: unavailable for
  // what may pass (I/O, memory, a full map or disk), internal for what a
  // retry cannot fix (permissions, a read-only file, a damaged file, a
  // transaction or value LMDB cannot hold).
  Status Error(int rc, std::string_view doing) const {
    std::string where = "device storage '" + path_ + "': " + std::string(doing) + ": ";
    switch (rc) {
      case MDB_MAP_FULL:
        return Unavailable(where + "the storage is full (its map of " + std::to_string(MapSize()) +
                           " bytes is used up, and it grows to " + std::to_string(max_map_) +
                           " at most; open it with a larger " +
                           "max_map_size); nothing was written");
      case MDB_INVALID:
      case MDB_VERSION_MISMATCH:
      case MDB_CORRUPTED:
      case MDB_PAGE_NOTFOUND:
      case MDB_INCOMPATIBLE:
      case MDB_BAD_DBI:
        return Internal(where + "the file is damaged or not an LMDB file: " + mdb_strerror(rc));
      case EIO:
      case ENOSPC:
      case ENOMEM:
      case EAGAIN:
      case EINTR:
      case MDB_READERS_FULL:
      case MDB_MAP_RESIZED:
        return Unavailable(where + mdb_strerror(rc));
      default:
        return Internal(where + mdb_strerror(rc));
    }
  }
  Status Malformed(std::string_view what) const {
    return Internal("device storage '" + path_ +
                    "' is not a device storage or is damaged: " + std::string(what));
  }

  // A transaction, aborted unless committed.
  class Txn {
   public:
    Txn() = default;
    Txn(const Txn&) = delete;
    Txn& operator=(const Txn&) = delete;
    ~Txn() {
      if (txn_ != nullptr) mdb_txn_abort(txn_);
    }
    MDB_txn* get() const { return txn_; }
    MDB_txn** out() { return &txn_; }
    int Commit() {
      MDB_txn* t = std::exchange(txn_, nullptr);
      return mdb_txn_commit(t);  // frees the transaction even when it fails
    }

   private:
    MDB_txn* txn_ = nullptr;
  };

  // A cursor, closed with its scope (before its transaction ends).
  class Cursor {
   public:
    Cursor() = default;
    Cursor(const Cursor&) = delete;
    Cursor& operator=(const Cursor&) = delete;
    ~Cursor() {
      if (cursor_ != nullptr) mdb_cursor_close(cursor_);
    }
    MDB_cursor* get() const { return cursor_; }
    MDB_cursor** out() { return &cursor_; }

   private:
    MDB_cursor* cursor_ = nullptr;
  };

  // Starts a transaction; on a fresh environment, also opens the database.
  Status Begin(Txn& txn, bool read_only) {
    int rc = mdb_txn_begin(env_, nullptr, read_only ? MDB_RDONLY : 0, txn.out());
    if (rc != MDB_SUCCESS) return Error(rc, "begin a transaction");
    if (!dbi_open_) {
      rc = mdb_dbi_open(txn.get(), nullptr, 0, &dbi_);
      if (rc != MDB_SUCCESS) return Error(rc, "open the database");
      dbi_open_ = true;
    }
    return Status::Ok();
  }

  // The number of keys in the database, as the file says (not a key
  // operation: not counted).
  Result<size_t> Entries(const Txn& txn) {
    MDB_stat stat;
    int rc = mdb_stat(txn.get(), dbi_, &stat);
    if (rc != MDB_SUCCESS) return Error(rc, "read the database size");
    return static_cast<size_t>(stat.ms_entries);
  }

  // The most keys the file's used pages could hold.
  size_t MaxKeys() const {
    MDB_envinfo info;
    MDB_stat stat;
    if (mdb_env_info(env_, &info) != MDB_SUCCESS || mdb_env_stat(env_, &stat) != MDB_SUCCESS) {
      return 0;
    }
    return (info.me_last_pgno + 1) * (stat.ms_psize / kMinBytesPerKey);
  }

  Status OpenCursor(const Txn& txn, Cursor& cursor) {
    int rc = mdb_cursor_open(txn.get(), dbi_, cursor.out());
    return rc == MDB_SUCCESS ? Status::Ok() : Error(rc, "open a cursor");
  }

  // Runs `body(txn)` in a write transaction and commits it; aborts when
  // the body or the commit fails, leaving the file as it was. When the map
  // was full, grows it (for a write of about `bytes`) and runs the body
  // once more.
  template <typename Body>
  Status Write(size_t bytes, Body body) {
    Status done = WriteOnce(body);
    if (done.ok() || !map_full_ || !Grow(bytes)) return done;
    return WriteOnce(body);
  }

  // The calls below count one each.
  int Get(const Txn& txn, std::string_view key, MDB_val* value) {
    Count();
    MDB_val k = Val(key);
    return mdb_get(txn.get(), dbi_, &k, value);
  }
  int Put(const Txn& txn, std::string_view key, std::string_view value, unsigned flags = 0) {
    Count();
    MDB_val k = Val(key), v = Val(value);
    return Note(mdb_put(txn.get(), dbi_, &k, &v, flags));
  }
  int Del(const Txn& txn, std::string_view key) {
    Count();
    MDB_val k = Val(key);
    return Note(mdb_del(txn.get(), dbi_, &k, nullptr));
  }
  int Step(const Cursor& cursor, MDB_val* key, MDB_val* value, MDB_cursor_op op) {
    Count();
    return mdb_cursor_get(cursor.get(), key, value, op);
  }
  int DelAtCursor(const Cursor& cursor) {
    Count();
    return Note(mdb_cursor_del(cursor.get(), 0));
  }

  Status PutMeta(const Txn& txn, const LmdbMeta& m) {
    int rc = Put(txn, internal::kMetaKey, internal::EncodeMeta(m));
    return rc == MDB_SUCCESS ? Status::Ok() : Error(rc, "write the sync position");
  }

  // Sets (or, for nullopt, deletes) one row.
  Status WriteRow(const Txn& txn, const RowName& name, const std::optional<std::string>& value) {
    std::optional<internal::RowKey> key = internal::RowKeyOf(name, hash_bytes_);
    if (!key) return Internal("device storage '" + path_ + "': cannot hash a long row key");
    if (key->cut) return WriteBucketRow(txn, name, key->bytes, value);
    int rc = value ? Put(txn, key->bytes, *value) : Del(txn, key->bytes);
    if (rc == MDB_SUCCESS || (!value && rc == MDB_NOTFOUND)) return Status::Ok();
    return Error(rc, value ? "write a row" : "delete a row");
  }

  // Appends the rows of the cut key `key` (its bucket) to `rows`, checking
  // that each belongs there.
  Status ReadBucket(std::string_view key, std::string_view value, std::vector<StoredRow>& rows) {
    const size_t first = rows.size();
    if (!internal::DecodeBucket(value, rows))
      return Malformed("a row with a long key is malformed");
    for (size_t i = first; i < rows.size(); ++i) {
      std::optional<internal::RowKey> own = internal::RowKeyOf(rows[i].name, hash_bytes_);
      if (!own || own->bytes != key) return Malformed("a row is stored under another name's key");
    }
    return Status::Ok();
  }

 private:
  void Count() { counter_.fetch_add(1, std::memory_order_relaxed); }
  int Note(int rc) {
    if (rc == MDB_MAP_FULL) map_full_ = true;
    return rc;
  }

  size_t MapSize() const {
    MDB_envinfo info;
    return mdb_env_info(env_, &info) == MDB_SUCCESS ? info.me_mapsize : 0;
  }

  template <typename Body>
  Status WriteOnce(Body& body) {
    map_full_ = false;
    Txn txn;
    SKIFF_RETURN_IF_ERROR(Begin(txn, false));
    SKIFF_RETURN_IF_ERROR(body(txn));
    int rc = Note(txn.Commit());
    return rc == MDB_SUCCESS ? Status::Ok() : Error(rc, "commit");
  }

  // Doubles the map, or more for a write of `bytes` (B-tree pages run
  // about half full), up to max_map_. Needs no transaction open (LMDB's
  // rule): Write calls it between attempts. False when it cannot grow.
  bool Grow(size_t bytes) {
    const size_t now = MapSize();
    if (now == 0 || now >= max_map_) return false;
    const size_t room = max_map_ - now;
    const size_t step = bytes > room / 4 ? room : std::max(now, 4 * bytes);
    return mdb_env_set_mapsize(env_, now + std::min(step, room)) == MDB_SUCCESS;
  }

  // All names that share the cut key `key` are one value (a bucket), so
  // two names never refuse each other.
  Status WriteBucketRow(const Txn& txn, const RowName& name, std::string_view key,
                        const std::optional<std::string>& value) {
    MDB_val old;
    int rc = Get(txn, key, &old);
    if (rc != MDB_SUCCESS && rc != MDB_NOTFOUND) return Error(rc, "read a row");
    std::vector<StoredRow> rows;
    if (rc == MDB_SUCCESS && !internal::DecodeBucket(View(old), rows)) {
      return Malformed("a row with a long key is malformed");
    }
    auto at = std::lower_bound(rows.begin(), rows.end(), name,
                               [](const StoredRow& row, const RowName& n) { return row.name < n; });
    const bool held = at != rows.end() && at->name == name;
    if (!value) {
      if (!held) return Status::Ok();  // nothing to delete
      rows.erase(at);
      if (rows.empty()) {
        rc = Del(txn, key);
        return rc == MDB_SUCCESS ? Status::Ok() : Error(rc, "delete a row");
      }
    } else if (held) {
      at->value = *value;
    } else {
      rows.insert(at, StoredRow{name, *value});
    }
    rc = Put(txn, key, internal::EncodeBucket(rows));
    return rc == MDB_SUCCESS ? Status::Ok() : Error(rc, "write a row");
  }

  MDB_env* env_;
  std::string path_;
  size_t max_map_;
  size_t hash_bytes_;
  std::atomic<uint64_t>& counter_;
  MDB_dbi dbi_ = 0;
  bool dbi_open_ = false;
  bool map_full_ = false;  // a call of the current attempt found the map full
  // What the file's meta holds as of the last commit; the storage is its
  // file's only writer (LMDB refuses a second open in one process).
  LmdbMeta meta_;
};

Result<std::unique_ptr<LmdbStorage>> LmdbStorage::Open(const std::string& path,
                                                       const LmdbStorageOptions& options) {
  if (options.map_size > options.max_map_size) {
    return BadRequest("device storage: map_size " + std::to_string(options.map_size) +
                      " is over max_map_size " + std::to_string(options.max_map_size));
  }
  if (options.cut_key_hash_bytes > kMaxHashBytes) {
    return BadRequest("device storage: cut_key_hash_bytes is over 32");
  }
  MDB_env* raw = nullptr;
  int rc = mdb_env_create(&raw);
  if (rc != MDB_SUCCESS) {
    return Unavailable("cannot create an LMDB environment: " + std::string(mdb_strerror(rc)));
  }
  // The format's keys are up to kMaxKeyBytes whatever the library: a build
  // with a smaller limit could not read a file another build wrote.
  if (const int max_key = mdb_env_get_maxkeysize(raw);
      max_key < static_cast<int>(internal::kMaxKeyBytes)) {
    mdb_env_close(raw);
    return Internal("device storage '" + path + "': this LMDB library allows keys of " +
                    std::to_string(max_key) + " bytes; the device storage format needs " +
                    std::to_string(internal::kMaxKeyBytes));
  }
  rc = mdb_env_set_mapsize(raw, options.map_size);
  if (rc == MDB_SUCCESS) {
    // NOTLS: the device calls from its own thread and the application's.
    unsigned flags = MDB_NOSUBDIR | MDB_NOTLS;
    if (!options.sync_each_commit) flags |= MDB_NOSYNC;
    rc = mdb_env_open(raw, path.c_str(), flags, 0644);
  }
  if (rc != MDB_SUCCESS) {
    mdb_env_close(raw);
    if (rc == MDB_INVALID || rc == MDB_VERSION_MISMATCH) {
      return Internal("device storage '" + path +
                      "' is not an LMDB file or is damaged: " + mdb_strerror(rc));
    }
    return Unavailable("cannot open device storage '" + path + "': " + mdb_strerror(rc));
  }
  if (Status whole = CheckSize(raw, path); !whole.ok()) {
    mdb_env_close(raw);
    return whole;
  }
  std::unique_ptr<LmdbStorage> storage(new LmdbStorage());
  storage->path_ = path;
  storage->env_ = std::make_unique<Env>(raw, path, options, storage->statements_);
  Env& env = *storage->env_;
  Status written = NoThrow(path, [&] {
    return env.Write(256, [&](const Env::Txn& txn) -> Status {
      MDB_val value;
      int got = env.Get(txn, internal::kMetaKey, &value);
      if (got == MDB_SUCCESS) {
        if (!internal::DecodeMeta(View(value), env.meta())) {
          return env.Malformed("its meta is not ours");
        }
        return Status::Ok();
      }
      if (got != MDB_NOTFOUND) return env.Error(got, "read the meta");
      // No meta: only an empty file is a new storage; keys without one are
      // another program's.
      SKIFF_ASSIGN_OR_RETURN(size_t entries, env.Entries(txn));
      if (entries != 0) return env.Malformed("it holds keys but no meta");
      return env.PutMeta(txn, env.meta());
    });
  });
  if (!written.ok()) return written;
  return storage;
}

LmdbStorage::LmdbStorage() = default;
LmdbStorage::~LmdbStorage() { (void)Close(); }

Status LmdbStorage::Close() {
  if (!env_) return Status::Ok();
  // Commits are not flushed (MDB_NOSYNC): flush once at close, as SQLite's
  // WAL is flushed when its last connection checkpoints on close.
  Status flushed = env_->Flush();
  env_.reset();
  return flushed;
}

bool LmdbStorage::flushes_each_commit() const {
  unsigned flags = 0;
  return env_ && mdb_env_get_flags(env_->raw(), &flags) == MDB_SUCCESS && (flags & MDB_NOSYNC) == 0;
}

Result<LmdbStorage::Env*> LmdbStorage::Live() const {
  if (!env_) return Internal("device storage '" + path_ + "' is closed");
  return env_.get();
}

Result<StoredState> LmdbStorage::Load() {
  SKIFF_ASSIGN_OR_RETURN(Env * live, Live());
  Env& env = *live;
  return NoThrow(path_, [&]() -> Result<StoredState> {
    Env::Txn txn;
    SKIFF_RETURN_IF_ERROR(env.Begin(txn, true));
    SKIFF_ASSIGN_OR_RETURN(size_t entries, env.Entries(txn));
    StoredState state;
    // The count is the file's word, so reserve no more than its pages hold.
    state.rows.reserve(std::min(entries, env.MaxKeys()));
    Env::Cursor cursor;
    SKIFF_RETURN_IF_ERROR(env.OpenCursor(txn, cursor));
    bool saw_meta = false, saw_cut = false;
    size_t keys = 0;
    MDB_val k, v;
    int rc = env.Step(cursor, &k, &v, MDB_FIRST);
    for (; rc == MDB_SUCCESS; rc = env.Step(cursor, &k, &v, MDB_NEXT)) {
      ++keys;
      std::string_view key = View(k), value = View(v);
      switch (key.empty() ? '\0' : key[0]) {
        case internal::kMetaPrefix: {
          LmdbMeta m;
          if (key != internal::kMetaKey || !internal::DecodeMeta(value, m)) {
            return env.Malformed("its meta is not ours");
          }
          state.position = m.position;
          state.last_seq = m.last_seq;
          saw_meta = true;
          break;
        }
        case internal::kOutboxPrefix: {
          OutboxEntry e;
          if (!internal::DecodeOutbox(key, value, e)) {
            return env.Malformed("an outbox entry is malformed");
          }
          state.outbox.push_back(std::move(e));
          break;
        }
        case internal::kRowPrefix: {
          if (internal::IsCutRowKey(key)) {
            SKIFF_RETURN_IF_ERROR(env.ReadBucket(key, value, state.rows));
            saw_cut = true;
            break;
          }
          StoredRow row;
          if (!internal::DecodeRowKey(key, row.name))
            return env.Malformed("a row key is malformed");
          row.value = std::string(value);
          state.rows.push_back(std::move(row));
          break;
        }
        default:
          return env.Malformed("it holds a key it does not know");
      }
    }
    if (rc != MDB_NOTFOUND) return env.Error(rc, "read the rows");
    if (!saw_meta) return env.Malformed("it has no meta");
    if (keys != entries) {
      return env.Malformed("its database counts " + std::to_string(entries) + " keys where " +
                           std::to_string(keys) + " were found");
    }
    // A cut key ends in a hash, so next to a long neighbour it may sort out
    // of the names' order: put the rows back in order (rare; only then).
    auto by_name = [](const StoredRow& a, const StoredRow& b) { return a.name < b.name; };
    if (saw_cut && !std::is_sorted(state.rows.begin(), state.rows.end(), by_name)) {
      std::sort(state.rows.begin(), state.rows.end(), by_name);
    }
    env.meta() = LmdbMeta{state.position, state.last_seq};
    return state;
  });
}

Status LmdbStorage::WriteLocal(const OutboxEntry& entry) {
  SKIFF_ASSIGN_OR_RETURN(Env * live, Live());
  Env& env = *live;
  SKIFF_RETURN_IF_ERROR(CheckFits(entry.name, entry.value));
  LmdbMeta next = env.meta();
  // The highest seq is kept apart from the outbox: once the outbox is
  // empty, a reopened device must still never reuse a seq.
  next.last_seq = std::max(next.last_seq, entry.seq);
  const size_t bytes = 2 * BytesOf(entry.name, entry.value);
  Status written = NoThrow(path_, [&] {
    return env.Write(bytes, [&](const Env::Txn& txn) -> Status {
      SKIFF_RETURN_IF_ERROR(env.WriteRow(txn, entry.name, entry.value));
      int rc = env.Put(txn, internal::OutboxKey(entry.seq), internal::EncodeOutbox(entry),
                       MDB_NOOVERWRITE);
      if (rc == MDB_KEYEXIST) {
        return Internal("device storage: the outbox already holds seq " +
                        std::to_string(entry.seq));
      }
      if (rc != MDB_SUCCESS) return env.Error(rc, "write an outbox entry");
      return env.PutMeta(txn, next);
    });
  });
  if (!written.ok()) return written;
  env.meta() = std::move(next);
  return Status::Ok();
}

Status LmdbStorage::ApplyRemote(const std::vector<RowWrite>& rows, const SyncPosition& position) {
  SKIFF_ASSIGN_OR_RETURN(Env * live, Live());
  Env& env = *live;
  size_t bytes = 256;
  for (const RowWrite& w : rows) {
    SKIFF_RETURN_IF_ERROR(CheckFits(w.name, w.value));
    bytes += BytesOf(w.name, w.value);
  }
  LmdbMeta next{position, env.meta().last_seq};
  Status written = NoThrow(path_, [&] {
    return env.Write(bytes, [&](const Env::Txn& txn) -> Status {
      for (const RowWrite& w : rows) SKIFF_RETURN_IF_ERROR(env.WriteRow(txn, w.name, w.value));
      return env.PutMeta(txn, next);
    });
  });
  if (!written.ok()) return written;
  env.meta() = std::move(next);
  return Status::Ok();
}

Status LmdbStorage::Acknowledge(uint64_t last_seq) {
  SKIFF_ASSIGN_OR_RETURN(Env * live, Live());
  Env& env = *live;
  return NoThrow(path_, [&] {
    return env.Write(256, [&](const Env::Txn& txn) -> Status {
      Env::Cursor cursor;
      SKIFF_RETURN_IF_ERROR(env.OpenCursor(txn, cursor));
      const std::string first = internal::OutboxKey(0);
      MDB_val k = Val(first), v;
      // After a delete the cursor already stands on the next key, and
      // MDB_NEXT returns that key rather than skipping it.
      int rc = env.Step(cursor, &k, &v, MDB_SET_RANGE);
      for (; rc == MDB_SUCCESS; rc = env.Step(cursor, &k, &v, MDB_NEXT)) {
        std::string_view key = View(k);
        if (key.empty() || key[0] != internal::kOutboxPrefix) break;
        uint64_t seq = 0;
        if (!internal::DecodeOutboxKey(key, seq))
          return env.Malformed("an outbox key is malformed");
        if (seq > last_seq) break;
        rc = env.DelAtCursor(cursor);
        if (rc != MDB_SUCCESS) return env.Error(rc, "delete an outbox entry");
      }
      if (rc != MDB_SUCCESS && rc != MDB_NOTFOUND) return env.Error(rc, "read the outbox");
      return Status::Ok();
    });
  });
}

}  // namespace skiff::client
