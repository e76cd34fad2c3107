// PostgresStore: documents in PostgreSQL through libpqxx 6.4, in three
// parts: its SQL (internal/pg_schema), its session (internal/pg_session: the
// connection, deadlines, reconnect, the instance guard and commit marks) and,
// here, its operations.
//
// A batch of one document op is one autocommit statement. Any other batch (a
// group commit of many writes, a sync push with its change log, synced rows
// and device sequences) is folded to its net effect and written set-wise by
// one autocommit statement of data-modifying CTEs over unnest() arrays
// (write_all), so a group commit of 100 writes or a push costs one statement
// and one round trip. Every write goes through PgSession::CommitMarked.
//
// Cluster fencing: a batch with fences is written by write_all_fenced, which
// checks them first in the same statement; a fence that no longer holds
// writes nothing and fails the batch here with unavailable. The same
// statement numbers and logs the batch's changes of watched tables, for
// watches across the cluster (WatchTable, ReadWatchLog; docs/cluster.md).
//
// Cluster sync (CommitSync): the row of skiff_sync_counter, locked for the
// transaction, orders sync commits across servers; the batch is numbered
// from it and written by write_all, which also sets the counter. NotifySync
// sends the NOTIFY after the commit, never inside it (docs/cluster.md).
#include "store/postgres_store.h"

#include <algorithm>
#include <set>
#include <tuple>

#include <pqxx/pqxx>

#include "store/internal/coalesce.h"
#include "store/internal/pg_array.h"
#include "store/internal/pg_session.h"
#include "store/internal/pg_url.h"

namespace skiff::store {
namespace {

using internal::PgArrayOf;

std::string_view Sv(const std::string& s) { return s; }
std::string_view OpTable(const WriteBatch::Op* op) { return op->table; }
std::string_view OpKey(const WriteBatch::Op* op) { return op->key; }
std::string_view OpValue(const WriteBatch::Op* op) { return op->value; }
std::string Text(const pqxx::field& f) { return std::string(f.c_str(), f.size()); }

// A row's fields, read left to right through one iterator. `row[i]` makes a
// field that copies the result's shared pointer (an atomic increment and
// decrement); reading a bootstrap page's rows this way instead took the
// server's CPU per bootstrap to 0.89x (docs/benchmarks.md).
class FieldsOf {
 public:
  explicit FieldsOf(const pqxx::row& row) : at_(row.begin()) {}
  // The next field; valid until the next call.
  const pqxx::field& Next() {
    if (started_) ++at_;
    started_ = true;
    return at_;  // the iterator is the field (its operator* returns a copy)
  }

 private:
  pqxx::row::const_iterator at_;
  bool started_ = false;
};

// The parameters of write_all_fenced for a batch's fences: each distinct
// (partition, owner, epoch) once. Two epochs of one partition cannot both
// hold, so a mix fails too.
struct FenceArgs {
  std::string partitions, owners, epochs, count;

  static FenceArgs Of(const std::vector<WriteBatch::Fence>& fences) {
    std::set<std::tuple<uint32_t, uint64_t, uint64_t>> distinct;
    for (const WriteBatch::Fence& f : fences) distinct.emplace(f.partition, f.owner, f.epoch);
    std::vector<std::string> partitions, owners, epochs;
    for (const auto& [partition, owner, epoch] : distinct) {
      partitions.push_back(std::to_string(partition));
      owners.push_back(std::to_string(owner));
      epochs.push_back(std::to_string(epoch));
    }
    return {PgArrayOf(partitions, Sv), PgArrayOf(owners, Sv), PgArrayOf(epochs, Sv),
            std::to_string(distinct.size())};
  }
};

// A batch CommitSync may write: valid, no document ops, and changes
// numbered on from the counter without a gap.
Status CheckSyncBatch(const WriteBatch& batch, uint64_t counter) {
  SKIFF_RETURN_IF_ERROR(ValidateBatch(batch));
  if (!batch.ops().empty()) return Internal("a sync commit carries no document ops");
  uint64_t expected = counter;
  for (const Change& c : batch.changes()) {
    if (c.sync_id != ++expected) {
      return Internal("sync commit numbered " + std::to_string(c.sync_id) + " where " +
                      std::to_string(expected) + " was next");
    }
  }
  return Status::Ok();
}

// The array parameters of write_all for `batch`, in their order.
struct WriteAllArgs {
  std::string put_tables, put_keys, put_values, delete_tables, delete_keys;
  std::string sync_ids, groups, tables, keys, values;
  std::string devices, users, seqs;
  // Fenced batches only, for the cluster's watch log: each net op's place
  // in the batch, and the ops folded away with theirs, so the log has every
  // change in the order it was made.
  std::string put_places, delete_places;
  std::string folded_tables, folded_keys, folded_values, folded_places;

  static WriteAllArgs Of(const WriteBatch& batch) {
    WriteAllArgs a;
    const internal::CoalescedBatch net = internal::Coalesce(batch);
    if (!batch.fences().empty()) a.AddPlaces(batch, net);
    a.put_tables = PgArrayOf(net.puts, OpTable);
    a.put_keys = PgArrayOf(net.puts, OpKey);
    a.put_values = PgArrayOf(net.puts, OpValue);
    a.delete_tables = PgArrayOf(net.deletes, OpTable);
    a.delete_keys = PgArrayOf(net.deletes, OpKey);
    const std::vector<Change>& changes = batch.changes();
    std::vector<std::string> ids;
    ids.reserve(changes.size());
    for (const Change& c : changes) ids.push_back(std::to_string(c.sync_id));
    a.sync_ids = PgArrayOf(ids, Sv);
    a.groups = PgArrayOf(changes, [](const Change& c) { return Sv(c.group); });
    a.tables = PgArrayOf(changes, [](const Change& c) { return Sv(c.table); });
    a.keys = PgArrayOf(changes, [](const Change& c) { return Sv(c.key); });
    a.values = PgArrayOf(changes, [](const Change& c) -> std::optional<std::string_view> {
      if (!c.value) return std::nullopt;
      return *c.value;
    });
    const std::vector<const DeviceSeq*> devices = internal::CoalesceDevices(batch);
    std::vector<std::string> seqs;
    seqs.reserve(devices.size());
    for (const DeviceSeq* d : devices) seqs.push_back(std::to_string(d->last_seq));
    a.devices = PgArrayOf(devices, [](const DeviceSeq* d) { return Sv(d->device); });
    a.users = PgArrayOf(devices, [](const DeviceSeq* d) { return Sv(d->user); });
    a.seqs = PgArrayOf(seqs, Sv);
    return a;
  }

 private:
  void AddPlaces(const WriteBatch& batch, const internal::CoalescedBatch& net) {
    const WriteBatch::Op* first = batch.ops().data();
    auto place = [first](const WriteBatch::Op* op) { return std::to_string(op - first); };
    auto places = [&](const std::vector<const WriteBatch::Op*>& ops) {
      std::vector<std::string> out;
      out.reserve(ops.size());
      for (const WriteBatch::Op* op : ops) out.push_back(place(op));
      return PgArrayOf(out, Sv);
    };
    put_places = places(net.puts);
    delete_places = places(net.deletes);
    folded_places = places(net.folded);
    folded_tables = PgArrayOf(net.folded, OpTable);
    folded_keys = PgArrayOf(net.folded, OpKey);
    folded_values =
        PgArrayOf(net.folded, [](const WriteBatch::Op* op) -> std::optional<std::string_view> {
          if (op->kind == WriteBatch::Op::Kind::kDelete) return std::nullopt;
          return op->value;
        });
  }
};

// Sends write_all (or its variant `name`) with `a`, then `extra`.
template <typename Tx, typename... Extra>
pqxx::result ExecWriteAll(Tx& tx, const char* name, const WriteAllArgs& a, Extra&&... extra) {
  return tx.exec_prepared(name, a.put_tables, a.put_keys, a.put_values, a.delete_tables,
                          a.delete_keys, a.sync_ids, a.groups, a.tables, a.keys, a.values,
                          a.devices, a.users, a.seqs, std::forward<Extra>(extra)...);
}

class PostgresStore final : public Store {
 public:
  PostgresStore(std::string url, const PostgresOptions& options, const Clock* clock)
      : session_(std::move(url), options, clock != nullptr ? *clock : system_clock_) {}

  // Opens the session, then brings the cluster's sync counter up to what a
  // server not in cluster mode may have numbered without it.
  Status Open() {
    SKIFF_RETURN_IF_ERROR(session_.Open());
    if (!session_.options().cluster) return Status::Ok();
    return session_.Run([&](pqxx::connection& conn) {
      pqxx::nontransaction tx(conn);
      // The counter never starts below what was written. Under the row
      // lock, so a cluster commit in flight is not undone.
      Count(1);
      tx.exec(
          "UPDATE skiff_sync_counter SET last_id = GREATEST(last_id, "
          "(SELECT COALESCE(MAX(sync_id), 0) FROM skiff_changes)) WHERE id = 1");
    });
  }

  std::string_view kind() const override { return "postgres"; }

  Result<std::optional<std::string>> Get(std::string_view table, std::string_view key) override {
    SKIFF_RETURN_IF_ERROR(ValidateGet(table, key));
    std::optional<std::string> value;
    SKIFF_RETURN_IF_ERROR(session_.Run([&](pqxx::connection& conn) {
      pqxx::nontransaction tx(conn);
      Count(1);
      pqxx::result r = tx.exec_prepared("get", std::string(table), std::string(key));
      if (!r.empty()) value = std::string(r[0][0].c_str(), r[0][0].size());
    }));
    return value;
  }

  Status Write(const WriteBatch& batch) override {
    SKIFF_RETURN_IF_ERROR(ValidateBatch(batch));
    if (batch.empty()) return Status::Ok();
    if (batch.size() == 1 && !batch.has_sync() && batch.fences().empty()) {  // autocommit
      const WriteBatch::Op& op = batch.ops().front();
      return session_.CommitMarked([&](pqxx::connection& conn, internal::CommitMark& mark) {
        pqxx::nontransaction tx(conn);
        Count(1);
        mark.Sending();
        if (op.kind == WriteBatch::Op::Kind::kPut) {
          tx.exec_prepared("put+m", op.table, op.key, op.value, mark.instance(), mark.seq());
        } else {
          tx.exec_prepared("delete+m", op.table, op.key, mark.instance(), mark.seq());
        }
        return Status::Ok();
      });
    }
    // One statement, its own transaction.
    const WriteAllArgs args = WriteAllArgs::Of(batch);
    return session_.CommitMarked([&](pqxx::connection& conn, internal::CommitMark& mark) {
      pqxx::nontransaction tx(conn);
      Count(1);
      mark.Sending();
      if (batch.fences().empty()) {
        ExecWriteAll(tx, "write_all+m", args, mark.instance(), mark.seq());
        return Status::Ok();
      }
      const FenceArgs fences = FenceArgs::Of(batch.fences());
      pqxx::result r = ExecWriteAll(
          tx, "write_all_fenced+m", args, fences.partitions, fences.owners, fences.epochs,
          fences.count, args.put_places, args.delete_places, args.folded_tables, args.folded_keys,
          args.folded_values, args.folded_places, mark.instance(), mark.seq());
      if (r[0][0].as<bool>()) return Status::Ok();
      // The statement ran and wrote nothing.
      return Unavailable(
          "this instance no longer owns a partition of this write (another instance took it "
          "over); nothing was written");
    });
  }

  Result<ScanPage> Scan(std::string_view table, std::string_view after, size_t limit) override {
    SKIFF_RETURN_IF_ERROR(ValidateScan(table, after, limit));
    ScanPage page;
    SKIFF_RETURN_IF_ERROR(session_.Run([&](pqxx::connection& conn) {
      pqxx::nontransaction tx(conn);
      Count(1);
      // One row past the limit tells whether another page follows.
      pqxx::result r = tx.exec_prepared("scan", std::string(table), std::string(after),
                                        static_cast<long long>(limit) + 1);
      page = ScanPage();
      for (const auto& row : r) {
        if (page.items.size() == limit) {
          page.next = page.items.back().key;
          break;
        }
        FieldsOf fields(row);
        std::string key = Text(fields.Next());
        page.items.push_back({std::move(key), Text(fields.Next())});
      }
    }));
    return page;
  }

  StoreCounters counters() const override { return session_.counters(); }

  Result<uint64_t> LastSyncId() override {
    uint64_t last = 0;
    SKIFF_RETURN_IF_ERROR(session_.Run([&](pqxx::connection& conn) {
      pqxx::nontransaction tx(conn);
      Count(1);
      last = tx.exec_prepared("last_sync_id")[0][0].as<uint64_t>();
    }));
    return last;
  }

  Result<std::map<std::string, uint64_t>> LastSyncIdByGroup() override {
    std::map<std::string, uint64_t> out;
    SKIFF_RETURN_IF_ERROR(session_.Run([&](pqxx::connection& conn) {
      pqxx::nontransaction tx(conn);
      Count(1);
      out.clear();
      for (const auto& row : tx.exec_prepared("last_by_group")) {
        out[Text(row[0])] = row[1].as<uint64_t>();
      }
    }));
    return out;
  }

  Result<std::vector<Change>> ReadChanges(uint64_t after, const std::vector<std::string>& groups,
                                          size_t limit) override {
    SKIFF_RETURN_IF_ERROR(ValidateGroups(groups));
    std::vector<Change> out;
    SKIFF_RETURN_IF_ERROR(session_.Run([&](pqxx::connection& conn) {
      pqxx::nontransaction tx(conn);
      Count(1);
      pqxx::result r = tx.exec_prepared("read_changes", static_cast<long long>(after),
                                        PgArrayOf(groups, Sv), static_cast<long long>(limit));
      out.clear();
      out.reserve(r.size());
      for (const auto& row : r) {
        FieldsOf fields(row);
        Change c;
        c.sync_id = fields.Next().as<uint64_t>();
        c.group = Text(fields.Next());
        c.table = Text(fields.Next());
        c.key = Text(fields.Next());
        if (const pqxx::field& value = fields.Next(); !value.is_null()) c.value = Text(value);
        out.push_back(std::move(c));
      }
    }));
    return out;
  }

  Result<SyncRowPage> ScanSyncRows(const std::vector<std::string>& groups,
                                   const SyncRowCursor& after, size_t limit) override {
    SKIFF_RETURN_IF_ERROR(ValidateSyncScan(groups, after, limit));
    // The caller's groups after the cursor's, in key order ("C" collation).
    std::vector<std::string_view> later;
    for (const std::string& g : groups) {
      if (g > after.group) later.push_back(g);
    }
    std::sort(later.begin(), later.end());
    later.erase(std::unique(later.begin(), later.end()), later.end());
    const bool in_cursor_group = !after.group.empty() && std::find(groups.begin(), groups.end(),
                                                                   after.group) != groups.end();
    SyncRowPage page;
    SKIFF_RETURN_IF_ERROR(session_.Run([&](pqxx::connection& conn) {
      pqxx::nontransaction tx(conn);
      page = SyncRowPage();
      // One row past the page says whether another follows.
      const size_t wanted = limit + 1;
      const auto take = [&](const pqxx::result& r) {
        page.rows.reserve(page.rows.size() + r.size());
        for (const auto& row : r) {
          FieldsOf fields(row);
          SyncRow& out = page.rows.emplace_back();
          out.group = Text(fields.Next());
          out.table = Text(fields.Next());
          out.key = Text(fields.Next());
          out.value = Text(fields.Next());
          out.sync_id = fields.Next().as<uint64_t>();
        }
      };
      if (in_cursor_group) {
        Count(1);
        take(tx.exec_prepared("scan_sync_rows_in_group", after.group, after.table, after.key,
                              static_cast<long long>(wanted)));
      }
      if (page.rows.size() < wanted && !later.empty()) {
        Count(1);
        take(tx.exec_prepared("scan_sync_rows_of_groups",
                              PgArrayOf(later, [](std::string_view g) { return g; }),
                              static_cast<long long>(wanted - page.rows.size())));
      }
      if (page.rows.size() > limit) {
        page.rows.resize(limit);
        const SyncRow& last = page.rows.back();
        page.next = SyncRowCursor{last.group, last.table, last.key};
      }
    }));
    return page;
  }

  Result<std::optional<DeviceSeq>> GetDevice(std::string_view device) override {
    SKIFF_RETURN_IF_ERROR(ValidateDevice(device));
    std::optional<DeviceSeq> found;
    SKIFF_RETURN_IF_ERROR(session_.Run([&](pqxx::connection& conn) {
      pqxx::nontransaction tx(conn);
      Count(1);
      pqxx::result r = tx.exec_prepared("get_device", std::string(device));
      if (!r.empty()) {
        found = DeviceSeq{std::string(device), Text(r[0][0]), r[0][1].as<uint64_t>()};
      }
    }));
    return found;
  }

  Result<std::map<std::string, uint64_t>> LastSyncIdByGroupSince(uint64_t after) override {
    std::map<std::string, uint64_t> out;
    SKIFF_RETURN_IF_ERROR(session_.Run([&](pqxx::connection& conn) {
      pqxx::nontransaction tx(conn);
      Count(1);
      out.clear();
      for (const auto& row :
           tx.exec_prepared("last_by_group_since", static_cast<long long>(after))) {
        out[Text(row[0])] = row[1].as<uint64_t>();
      }
    }));
    return out;
  }

  // BEGIN, the counter's lock, the devices' records, the batch in one
  // statement that also sets the counter and carries the commit mark, COMMIT.
  Result<uint64_t> CommitSync(const std::vector<std::string>& devices,
                              const SyncBatchBuilder& build) override {
    for (const std::string& device : devices) SKIFF_RETURN_IF_ERROR(ValidateDevice(device));
    uint64_t last = 0;
    SKIFF_RETURN_IF_ERROR(
        session_.CommitMarked([&](pqxx::connection& conn, internal::CommitMark& mark) {
          pqxx::work tx(conn);
          Count(2);  // BEGIN, the lock
          const uint64_t counter = tx.exec_prepared("lock_sync_counter")[0][0].as<uint64_t>();
          std::map<std::string, DeviceSeq, std::less<>> records;
          if (!devices.empty()) {
            // After the lock, so it sees every commit that held it before.
            Count(1);
            for (const auto& row : tx.exec_prepared("get_devices", PgArrayOf(devices, Sv))) {
              DeviceSeq d{Text(row[0]), Text(row[1]), row[2].as<uint64_t>()};
              records.emplace(d.device, std::move(d));
            }
          }
          WriteBatch batch;
          build(counter, records, &batch);
          // The built batch is not one this call may write.
          Status refused = CheckSyncBatch(batch, counter);
          if (!refused.ok()) {
            Count(1);  // ROLLBACK, as the transaction ends unfinished
            return refused;
          }
          last = counter + batch.changes().size();
          if (!batch.empty()) {
            Count(1);
            ExecWriteAll(tx, "write_all_counted+m", WriteAllArgs::Of(batch),
                         static_cast<long long>(last), mark.instance(), mark.seq());
          }
          Count(1);  // COMMIT
          // An empty batch commits nothing: its outcome needs no check.
          if (!batch.empty()) mark.Sending();
          tx.commit();
          return Status::Ok();
        }));
    return last;
  }

  Status NotifySync(uint64_t last) override {
    return session_.Run([&](pqxx::connection& conn) {
      pqxx::nontransaction tx(conn);
      Count(1);
      tx.exec_prepared("notify_sync", std::to_string(last));
    });
  }

  Result<WatchLogHead> ReadWatchLogHead() override {
    WatchLogHead head;
    SKIFF_RETURN_IF_ERROR(session_.Run([&](pqxx::connection& conn) {
      pqxx::nontransaction tx(conn);
      Count(1);
      head = WatchLogHead();
      for (const auto& row : tx.exec_prepared("watch_log_head")) {
        head.version = row[0].as<uint64_t>();
        if (!row[1].is_null()) head.tables.push_back(Text(row[1]));
      }
    }));
    return head;
  }

  Result<uint64_t> WatchTable(std::string_view table) override {
    SKIFF_RETURN_IF_ERROR(ValidateTable(table));
    uint64_t version = 0;
    bool full = false;
    SKIFF_RETURN_IF_ERROR(session_.Run([&](pqxx::connection& conn) {
      pqxx::nontransaction tx(conn);
      Count(1);
      full = false;
      pqxx::result r = tx.exec_prepared("watched_at", std::string(table));
      version = r[0][0].as<uint64_t>();
      if (r[0][1].as<bool>()) return;
      // Its own transaction (autocommit): waits for the fenced batches in
      // flight, which did not log the table.
      Count(1);
      r = tx.exec_prepared("watch_table", std::string(table),
                           static_cast<long long>(kMaxWatchedTables));
      version = r[0][0].as<uint64_t>();
      full = !r[0][2].as<bool>();
    }));
    if (full) {
      return Unavailable("the cluster already watches its most tables (" +
                         std::to_string(kMaxWatchedTables) + "); watch one of those");
    }
    return version;
  }

  Result<std::vector<WatchLogEntry>> ReadWatchLog(uint64_t after, size_t limit) override {
    std::vector<WatchLogEntry> entries;
    SKIFF_RETURN_IF_ERROR(session_.Run([&](pqxx::connection& conn) {
      pqxx::nontransaction tx(conn);
      Count(1);
      entries.clear();
      for (const auto& row : tx.exec_prepared("read_watch_log", static_cast<long long>(after),
                                              static_cast<long long>(limit))) {
        FieldsOf fields(row);
        WatchLogEntry e;
        e.version = fields.Next().as<uint64_t>();
        e.table = Text(fields.Next());
        if (const pqxx::field& key = fields.Next(); !key.is_null()) e.key = Text(key);
        if (const pqxx::field& value = fields.Next(); !value.is_null()) e.value = Text(value);
        entries.push_back(std::move(e));
      }
    }));
    return entries;
  }

  Status TrimWatchLog(uint64_t through) override {
    return session_.Run([&](pqxx::connection& conn) {
      pqxx::nontransaction tx(conn);
      Count(1);
      tx.exec_prepared("trim_watch_log", static_cast<long long>(through));
    });
  }

 private:
  void Count(uint64_t n) { session_.Count(n); }

  const SystemClock system_clock_;  // read when no clock was given
  internal::PgSession session_;
};

Result<std::unique_ptr<Store>> OpenOn(const std::string& url, const PostgresOptions& options,
                                      const Clock* clock) {
  SKIFF_ASSIGN_OR_RETURN(internal::PgUrl parsed, internal::ParsePgUrl(url, options));
  auto store = std::make_unique<PostgresStore>(parsed.libpq_url, parsed.options, clock);
  SKIFF_RETURN_IF_ERROR(store->Open());
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace

Result<std::unique_ptr<Store>> OpenPostgresStore(const std::string& url,
                                                 const PostgresOptions& options) {
  return OpenOn(url, options, nullptr);
}

Result<std::unique_ptr<Store>> OpenPostgresStore(const std::string& url,
                                                 const PostgresOptions& options,
                                                 const Clock& clock) {
  return OpenOn(url, options, &clock);
}

}  // namespace skiff::store
