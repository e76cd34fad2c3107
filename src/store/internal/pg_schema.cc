#include "store/internal/pg_schema.h"

#include <string>

#include "store/change_listener.h"

namespace skiff::store::internal {
namespace {

// The CTE that writes the commit mark: (instance, seq) are parameters
// `first` and `first` + 1; `where` may make the write conditional.
std::string MarkCte(int first, const std::string& where = "") {
  return "skiff_mark AS (INSERT INTO skiff_commit_marks(instance, seq) SELECT $" +
         std::to_string(first) + "::text, $" + std::to_string(first + 1) + "::bigint" + where +
         " ON CONFLICT (instance) DO UPDATE SET seq = excluded.seq, at = now())";
}

// `sql`, a write statement with `params` parameters of its own, with the
// commit mark's CTE in front.
std::string Marked(const std::string& sql, int params) {
  return "WITH " + MarkCte(params + 1) + " " + sql;
}

// Prepares `sql` as `name` and, marked, as `name` + "+m".
void PrepareWrite(pqxx::connection& conn, const std::string& name, const std::string& sql,
                  int params) {
  conn.prepare(name, sql);
  conn.prepare(name + "+m", Marked(sql, params));
}

// A whole batch in one statement, so a batch needs no BEGIN and COMMIT of
// its own: the documents' net puts ($1-$3) and deletes ($4, $5), the change
// log ($6-$10), the devices' sequences ($11-$13), then what `kind` adds, then
// the commit mark (instance, seq). Each part is a data-modifying CTE over
// unnest() arrays (an empty array writes nothing). The synced rows are
// derived from the log rows the statement inserts, the last change to
// each row winning, so a value crosses the wire once. The parts touch
// disjoint rows (documents and changes are folded to one per key first),
// which one statement requires. The statement returns one boolean: false
// when a fence did not hold and nothing was written.
enum class WriteAllKind {
  kPlain,
  // Also sets the cluster's sync counter ($14).
  kCounted,
  // Cluster mode's fencing: partitions ($14), owners ($15) and epochs
  // ($16) of the batch's distinct fences, and their count ($17); then, for
  // the watch log (WatchLogCtes), the places in the batch of the net puts
  // ($18) and deletes ($19), and the ops folded into them: tables ($20),
  // keys ($21), values ($22, null for a delete), places ($23). Every
  // part, the mark too, writes only when each of them is still owned at
  // its epoch. The partition rows are locked FOR KEY SHARE before anything
  // is written (each part's condition is evaluated before its first row)
  // and stay locked until the statement commits, so a claim, which locks
  // them FOR UPDATE, waits for this write and cannot slip in between.
  kFenced,
};
// The fenced statement's part that feeds watches across the cluster
// (docs/cluster.md, "watch across instances"): it reads which tables are
// watched from the watch counter's row under FOR KEY SHARE (after the
// fences, so locks are always taken partitions first), numbers the batch's
// changes of those tables from the counter, every op in the batch's order
// (the ops folded into a key's net op too, so no value is skipped), and
// appends them to the log. The counter's row lock, held to the commit,
// orders these commits: versions are gap-free in commit order. A table becoming watched locks the
// row FOR UPDATE (WatchTable), which waits for the batches in flight; a batch after it reads the
// new list (in READ COMMITTED a row lock returns the row's newest version). A batch that writes no
// watched table takes only the share lock, which batches do not queue on.
std::string WatchLogCtes() {
  return "watch_list AS (SELECT watched FROM skiff_watch_counter WHERE id = 1 "
         "AND (SELECT ok FROM held) FOR KEY SHARE), "
         "watch_changes AS (SELECT row_number() OVER (ORDER BY c.place) AS n, c.tbl, c.key, "
         "c.value FROM (SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $18::int[]) "
         "AS p(tbl, key, value, place) "
         "UNION ALL SELECT d.tbl, d.key, NULL::text, d.place FROM unnest($4::text[], "
         "$5::text[], $19::int[]) AS d(tbl, key, place) "
         "UNION ALL SELECT * FROM unnest($20::text[], $21::text[], $22::text[], $23::int[]) "
         "AS f(tbl, key, value, place)) c, watch_list w WHERE c.tbl = ANY(w.watched)), "
         "watch_bump AS (UPDATE skiff_watch_counter "
         "SET last_version = last_version + (SELECT count(*) FROM watch_changes) "
         "WHERE id = 1 AND EXISTS (SELECT 1 FROM watch_changes) RETURNING last_version), "
         "watch_log AS (INSERT INTO skiff_watch_log(version, tbl, key, value) "
         "SELECT b.last_version - (SELECT count(*) FROM watch_changes) + c.n, c.tbl, c.key, "
         "c.value FROM watch_changes c CROSS JOIN watch_bump b), ";
}

std::string WriteAllSql(WriteAllKind kind) {
  std::string with = "WITH ";
  std::string where, and_held, counter, watch;
  int next = 14;
  if (kind == WriteAllKind::kFenced) {
    with +=
        "fence AS (SELECT p.partition FROM skiff_partitions p JOIN unnest($14::int[], "
        "$15::bigint[], $16::bigint[]) AS f(partition, owner, epoch) ON p.partition = "
        "f.partition AND p.owner = f.owner AND p.epoch = f.epoch FOR KEY SHARE OF p), "
        "held AS (SELECT count(*) = $17::bigint AS ok FROM fence), ";
    where = " WHERE (SELECT ok FROM held)";
    and_held = " AND (SELECT ok FROM held)";
    watch = WatchLogCtes();
    next = 24;
  } else if (kind == WriteAllKind::kCounted) {
    counter = ", counter AS (UPDATE skiff_sync_counter SET last_id = $14 WHERE id = 1)";
    next = 15;
  }
  return with +
         "put_docs AS (INSERT INTO skiff_documents(tbl, key, value) "
         "SELECT * FROM unnest($1::text[], $2::text[], $3::text[])" +
         where +
         " ON CONFLICT (tbl, key) DO UPDATE SET value = excluded.value), "
         "delete_docs AS (DELETE FROM skiff_documents d "
         "USING unnest($4::text[], $5::text[]) AS x(tbl, key) "
         "WHERE d.tbl = x.tbl COLLATE \"C\" AND d.key = x.key COLLATE \"C\"" +
         and_held +
         "), "
         "log AS (INSERT INTO skiff_changes(sync_id, grp, tbl, key, value) "
         "SELECT * FROM unnest($6::bigint[], $7::text[], $8::text[], $9::text[], $10::text[])" +
         where +
         " RETURNING sync_id, grp, tbl, key, value), "
         "latest AS (SELECT DISTINCT ON (grp, tbl, key) grp, tbl, key, value, sync_id FROM log "
         "ORDER BY grp, tbl, key, sync_id DESC), "
         "put_rows AS (INSERT INTO skiff_sync_rows(grp, tbl, key, value, sync_id) "
         "SELECT grp, tbl, key, value, sync_id FROM latest WHERE value IS NOT NULL "
         "ON CONFLICT (grp, tbl, key) DO UPDATE SET value = excluded.value, "
         "sync_id = excluded.sync_id), "
         "delete_rows AS (DELETE FROM skiff_sync_rows r USING latest x WHERE x.value IS NULL "
         "AND r.grp = x.grp AND r.tbl = x.tbl AND r.key = x.key), "
         "devices AS (INSERT INTO skiff_devices(device, usr, last_seq) "
         "SELECT * FROM unnest($11::text[], $12::text[], $13::bigint[])" +
         where +
         " ON CONFLICT (device) DO UPDATE SET usr = excluded.usr, last_seq = excluded.last_seq), " +
         watch + MarkCte(next, where) + counter +
         (kind == WriteAllKind::kFenced
              ? std::string(" SELECT (SELECT ok FROM held), (SELECT count(pg_notify(") +
                    kWatchChannelSql + ", last_version::text)) FROM watch_bump)"
              : std::string(" SELECT true"));
}

}  // namespace

// The first statement serialises schema creation between processes that
// open the same database.
const char* const kPgSchemaSql = R"sql(
SELECT pg_advisory_xact_lock(7283514);
CREATE TABLE IF NOT EXISTS skiff_meta(
  name  TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS skiff_documents(
  tbl   TEXT COLLATE "C" NOT NULL,
  key   TEXT COLLATE "C" NOT NULL,
  value TEXT NOT NULL,
  PRIMARY KEY (tbl, key)
);
CREATE TABLE IF NOT EXISTS skiff_changes(
  sync_id BIGINT PRIMARY KEY,
  grp     TEXT COLLATE "C" NOT NULL,
  tbl     TEXT COLLATE "C" NOT NULL,
  key     TEXT COLLATE "C" NOT NULL,
  value   TEXT
);
CREATE INDEX IF NOT EXISTS skiff_changes_by_group ON skiff_changes(grp, sync_id);
CREATE TABLE IF NOT EXISTS skiff_sync_rows(
  grp     TEXT COLLATE "C" NOT NULL,
  tbl     TEXT COLLATE "C" NOT NULL,
  key     TEXT COLLATE "C" NOT NULL,
  value   TEXT NOT NULL,
  sync_id BIGINT NOT NULL,
  PRIMARY KEY (grp, tbl, key)
);
CREATE TABLE IF NOT EXISTS skiff_devices(
  device   TEXT COLLATE "C" PRIMARY KEY,
  usr      TEXT NOT NULL,
  last_seq BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS skiff_commit_marks(
  instance TEXT COLLATE "C" PRIMARY KEY,
  seq      BIGINT NOT NULL,
  at       TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS skiff_sync_counter(
  id      INT PRIMARY KEY CHECK (id = 1),
  last_id BIGINT NOT NULL
);
INSERT INTO skiff_sync_counter(id, last_id) VALUES (1, 0) ON CONFLICT DO NOTHING;
CREATE TABLE IF NOT EXISTS skiff_watch_counter(
  id           INT PRIMARY KEY CHECK (id = 1),
  last_version BIGINT NOT NULL,
  watched      TEXT[] NOT NULL
);
INSERT INTO skiff_watch_counter(id, last_version, watched) VALUES (1, 0, '{}')
  ON CONFLICT DO NOTHING;
CREATE TABLE IF NOT EXISTS skiff_watch_log(
  version BIGINT PRIMARY KEY,
  tbl     TEXT COLLATE "C" NOT NULL,
  key     TEXT COLLATE "C",
  value   TEXT
);
INSERT INTO skiff_meta(name, value) VALUES ('schema_version', '1') ON CONFLICT DO NOTHING;
)sql";

void PreparePgStatements(pqxx::connection& conn) {
  conn.prepare("get", "SELECT value FROM skiff_documents WHERE tbl = $1 AND key = $2");
  PrepareWrite(conn, "put",
               "INSERT INTO skiff_documents(tbl, key, value) VALUES ($1, $2, $3) "
               "ON CONFLICT (tbl, key) DO UPDATE SET value = excluded.value",
               3);
  PrepareWrite(conn, "delete", "DELETE FROM skiff_documents WHERE tbl = $1 AND key = $2", 2);
  // Every batch carries its commit mark (see above), so only marked forms.
  conn.prepare("write_all+m", WriteAllSql(WriteAllKind::kPlain));
  conn.prepare("write_all_counted+m", WriteAllSql(WriteAllKind::kCounted));
  conn.prepare("write_all_fenced+m", WriteAllSql(WriteAllKind::kFenced));
  // A write, not a read: its own commit waits for the synchronous standby,
  // which then has the mark's commit too (WAL is replicated in order), so a
  // mark found here is one a failover keeps.
  conn.prepare("commit_mark",
               "UPDATE skiff_commit_marks SET at = now() WHERE instance = $1 RETURNING seq");
  conn.prepare("last_sync_id", "SELECT COALESCE(MAX(sync_id), 0) FROM skiff_changes");
  conn.prepare("last_by_group", "SELECT grp, MAX(sync_id) FROM skiff_changes GROUP BY grp");
  conn.prepare("read_changes",
               "SELECT sync_id, grp, tbl, key, value FROM skiff_changes "
               "WHERE sync_id > $1 AND grp = ANY($2::text[]) ORDER BY sync_id LIMIT $3");
  // A page is the rest of the cursor's group, then the caller's later groups
  // from their start: each an index scan that begins where its rows begin.
  // One statement, `(grp, tbl, key) > (...) AND grp = ANY(...)`, began each
  // page at the start of the cursor's group and walked to the cursor, so a
  // paged bootstrap cost the square of its rows.
  conn.prepare("scan_sync_rows_in_group",
               "SELECT grp, tbl, key, value, sync_id FROM skiff_sync_rows "
               "WHERE grp = $1 AND (tbl, key) > ($2, $3) ORDER BY tbl, key LIMIT $4");
  conn.prepare("scan_sync_rows_of_groups",
               "SELECT grp, tbl, key, value, sync_id FROM skiff_sync_rows "
               "WHERE grp = ANY($1::text[]) ORDER BY grp, tbl, key LIMIT $2");
  conn.prepare("get_device", "SELECT usr, last_seq FROM skiff_devices WHERE device = $1");
  // Cluster sync. The counter row's lock orders sync commits across servers.
  conn.prepare("lock_sync_counter",
               "SELECT last_id FROM skiff_sync_counter WHERE id = 1 FOR UPDATE");
  conn.prepare("get_devices",
               "SELECT device, usr, last_seq FROM skiff_devices WHERE device = ANY($1::text[])");
  // Tells the other cluster instances (payload: the commit's last sync id).
  conn.prepare("notify_sync", std::string("SELECT pg_notify(") + kSyncChannelSql + ", $1)");
  conn.prepare("last_by_group_since",
               "SELECT grp, MAX(sync_id) FROM skiff_changes WHERE sync_id > $1 GROUP BY grp");
  conn.prepare("scan",
               "SELECT key, value FROM skiff_documents WHERE tbl = $1 AND key > $2 "
               "ORDER BY key LIMIT $3");
  // Cluster watch (WatchLogCtes above). One row per watched table (none
  // while none is), each with the counter.
  conn.prepare("watch_log_head",
               "SELECT c.last_version, t FROM skiff_watch_counter c "
               "LEFT JOIN LATERAL unnest(c.watched) t ON true WHERE c.id = 1");
  // Read without a lock first: a table already watched needs none.
  conn.prepare(
      "watched_at",
      "SELECT last_version, $1::text = ANY(watched) FROM skiff_watch_counter WHERE id = 1");
  // The log's entry without a key marks where the table's changes begin.
  // At most $2 tables: the list is read by every fenced batch. Returns the
  // version, the NOTIFY, and whether the table is watched now (false: the
  // list was full).
  conn.prepare(
      "watch_table",
      std::string("WITH cur AS (SELECT last_version, watched FROM skiff_watch_counter "
                  "WHERE id = 1 FOR UPDATE), "
                  "bump AS (UPDATE skiff_watch_counter SET last_version = last_version + 1, "
                  "watched = array_append(watched, $1::text) WHERE id = 1 AND NOT EXISTS "
                  "(SELECT 1 FROM cur WHERE $1::text = ANY(cur.watched)) AND "
                  "cardinality(watched) < $2 RETURNING last_version), "
                  "mark AS (INSERT INTO skiff_watch_log(version, tbl) "
                  "SELECT last_version, $1::text FROM bump) "
                  "SELECT COALESCE((SELECT last_version FROM bump), "
                  "(SELECT last_version FROM cur)), (SELECT count(pg_notify(") +
          kWatchChannelSql +
          ", last_version::text)) FROM bump), EXISTS (SELECT 1 FROM bump) OR EXISTS "
          "(SELECT 1 FROM cur WHERE $1::text = ANY(cur.watched))");
  conn.prepare("read_watch_log",
               "SELECT version, tbl, key, value FROM skiff_watch_log WHERE version > $1 "
               "ORDER BY version LIMIT $2");
  conn.prepare("trim_watch_log", "DELETE FROM skiff_watch_log WHERE version <= $1");
}

}  // namespace skiff::store::internal
