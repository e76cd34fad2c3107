#include "server/internal/metrics_page.h"

#include "server/internal/metrics_text.h"
#include "server/internal/wire/request_fields.h"

namespace skiff::server::internal {
namespace {

void Counter(MetricsText& t, std::string_view name, std::string_view help, uint64_t value) {
  t.Family(name, "counter", help);
  t.Sample(name, {}, value);
}

void Gauge(MetricsText& t, std::string_view name, std::string_view help, uint64_t value) {
  t.Family(name, "gauge", help);
  t.Sample(name, {}, value);
}

void Connections(MetricsText& t, const ListenerStats& n, size_t sessions) {
  Gauge(t, "skiff_connections_open", "Connections open now, handshakes included.", n.connections);
  Gauge(t, "skiff_sessions_open", "Logged-in connections now.", sessions);
  Counter(t, "skiff_connections_accepted_total", "TCP connections accepted.", n.accepted);
  t.Family("skiff_connections_refused_total", "counter",
           "Connections refused or not completed, by reason: limit (max_connections or per "
           "address), descriptors (accept found no descriptor), handshake (bad, oversized or "
           "timed-out opening handshake), tls (a TLS handshake refused, or bytes that are not "
           "TLS on a wss:// port).");
  t.Sample("skiff_connections_refused_total", {{"reason", "limit"}}, n.refused);
  t.Sample("skiff_connections_refused_total", {{"reason", "descriptors"}}, n.descriptor_exhaustion);
  t.Sample("skiff_connections_refused_total", {{"reason", "handshake"}}, n.handshake_failures);
  t.Sample("skiff_connections_refused_total", {{"reason", "tls"}}, n.tls_failures);
  t.Family("skiff_connections_closed_total", "counter",
           "Connections the server closed, by reason.");
  t.Sample("skiff_connections_closed_total", {{"reason", "protocol_error"}}, n.protocol_errors);
  t.Sample("skiff_connections_closed_total", {{"reason", "frame_timeout"}}, n.frame_timeouts);
  t.Sample("skiff_connections_closed_total", {{"reason", "send_timeout"}}, n.send_timeouts);
  t.Sample("skiff_connections_closed_total", {{"reason", "idle"}}, n.idle_closes);
  Gauge(t, "skiff_connections_paused", "Connections not read now (back-pressure).", n.paused);
  t.Family("skiff_buffered_bytes", "gauge", "Buffered bytes of all connections now.");
  t.Sample("skiff_buffered_bytes", {{"direction", "input"}}, n.buffered_input_bytes);
  t.Sample("skiff_buffered_bytes", {{"direction", "output"}}, n.buffered_output_bytes);
  Gauge(t, "skiff_buffered_limit_bytes", "The budget of all buffered bytes (max_buffered_bytes).",
        n.max_buffered_bytes);
  Counter(t, "skiff_health_checks_total", "GET /healthz answered.", n.health_checks);
  Counter(t, "skiff_batched_sends_total",
          "Sends to many connections handed to the kernel together (io_uring).", n.batched_sends);
  Counter(t, "skiff_batch_system_calls_total", "The system calls the batched sends took.",
          n.batch_system_calls);
}

void Requests(MetricsText& t, const RequestMetrics& m) {
  t.Family("skiff_requests_total", "counter",
           "Requests answered, by op and outcome (ok or the error code).");
  for (size_t op = 0; op < kOpCount; ++op) {
    const std::string_view op_name = OpName(static_cast<Op>(op));
    for (size_t code = 0; code < kStatusCodeCount; ++code) {
      const auto outcome = static_cast<StatusCode>(code);
      const uint64_t n = m.requests(static_cast<Op>(op), outcome);
      // Every op's ok series always, so a rate of it exists from the start;
      // the error series once they happen.
      if (n == 0 && outcome != StatusCode::kOk) continue;
      t.Sample("skiff_requests_total", {{"op", op_name}, {"outcome", StatusCodeName(outcome)}}, n);
    }
  }
  t.Family("skiff_request_duration_seconds", "histogram",
           "Time from a request's bytes being read to its reply being decided (a write's "
           "commit wait excluded), by class of op.");
  for (size_t c = 0; c < kOpClassCount; ++c) {
    const LatencyHistogram h = m.latency(static_cast<OpClass>(c));
    t.Histogram("skiff_request_duration_seconds", {{"class", OpClassName(static_cast<OpClass>(c))}},
                kLatencyBoundsSeconds, h.counts, static_cast<double>(h.sum_ns) / 1e9);
  }
}

// From the counters themselves: they count whether or not a limit is on.
void Limits(MetricsText& t, const RequestMetrics& m, uint64_t addresses_tracked) {
  t.Family("skiff_rate_limited_total", "counter",
           "Requests refused with rate_limited, by the limit that refused them.");
  for (size_t i = 0; i < kLimitReasonCount; ++i) {
    const auto reason = static_cast<LimitReason>(i);
    t.Sample("skiff_rate_limited_total", {{"reason", LimitReasonName(reason)}}, m.refusals(reason));
  }
  Counter(t, "skiff_failed_logins_total", "Logins refused for a wrong user or secret.",
          m.failed_logins());
  Gauge(t, "skiff_failed_login_addresses", "Addresses held by the failed-login guard now.",
        addresses_tracked);
}

void Storage(MetricsText& t, const StatsFigures& f) {
  Counter(t, "skiff_commit_batches_total", "Store transactions the committer committed.",
          f.commits.transactions);
  Counter(t, "skiff_commit_writes_total", "Writes (puts and deletes) queued to the committer.",
          f.commits.writes);
  Counter(t, "skiff_commit_failures_total", "Committer transactions that failed.",
          f.commits.failures);
  t.Family("skiff_commit_batch_writes", "histogram",
           "Committed committer transactions by the writes in them (a key's superseded writes "
           "included).");
  t.Histogram("skiff_commit_batch_writes", {}, kCommitBatchWritesBounds, f.commits.batch_writes,
              static_cast<double>(f.commits.batch_writes_sum));
  t.Family("skiff_commit_duration_seconds", "histogram",
           "Committed committer transactions by the time from taking the batch off the queue to "
           "the store's commit returning.");
  t.Histogram("skiff_commit_duration_seconds", {}, kCommitDurationBoundsSeconds, f.commits.duration,
              static_cast<double>(f.commits.duration_sum_ns) / 1e9);
  Counter(t, "skiff_store_statements_total",
          "SQL statements the store ran, BEGIN and COMMIT "
          "included.",
          f.store_statements);
  t.Family("skiff_tier_documents", "gauge", "Documents held in memory now, by tier.");
  t.Sample("skiff_tier_documents", {{"tier", "hot"}}, f.tiers.hot.documents);
  t.Sample("skiff_tier_documents", {{"tier", "packed"}}, f.tiers.packed.documents);
  t.Family("skiff_tier_bytes", "gauge",
           "Bytes of the documents in memory now, by tier (hot: JSON text; packed: packed).");
  t.Sample("skiff_tier_bytes", {{"tier", "hot"}}, f.tiers.hot.bytes);
  t.Sample("skiff_tier_bytes", {{"tier", "packed"}}, f.tiers.packed.bytes);
  Counter(t, "skiff_tier_evictions_total", "Documents dropped from memory.", f.tiers.evictions);
}

void Sync(MetricsText& t, const StatsFigures& f) {
  Counter(t, "skiff_sync_pushes_total", "Push requests answered ok.", f.sync.pushes);
  Counter(t, "skiff_sync_changes_applied_total", "Pushed changes given a sync id.",
          f.sync.changes_applied);
  Counter(t, "skiff_sync_commits_total", "Store transactions of the sync committer.",
          f.sync.commits);
  Gauge(t, "skiff_sync_waits_held", "Sync waits held now.", f.sync.waits_held);
  t.Family("skiff_sync_waits_total", "counter", "Sync waits answered, by how.");
  t.Sample("skiff_sync_waits_total", {{"answer", "at_once"}}, f.sync.waits_answered_at_once);
  t.Sample("skiff_sync_waits_total", {{"answer", "woken"}}, f.sync.waits_woken);
  t.Sample("skiff_sync_waits_total", {{"answer", "expired"}}, f.sync.waits_expired);
}

void Geo(MetricsText& t, const StatsFigures& f) {
  t.Family("skiff_geo_points", "gauge", "Documents in a table's geo index now.");
  for (const GeoTableStats& g : f.geo) t.Sample("skiff_geo_points", {{"table", g.table}}, g.points);
  t.Family("skiff_geo_unindexed_documents", "gauge",
           "Documents of a geo table without a usable position now.");
  for (const GeoTableStats& g : f.geo) {
    t.Sample("skiff_geo_unindexed_documents", {{"table", g.table}}, g.unindexed);
  }
  t.Family("skiff_geo_index_bytes", "gauge", "A geo index's own bytes now.");
  for (const GeoTableStats& g : f.geo) {
    t.Sample("skiff_geo_index_bytes", {{"table", g.table}},
             static_cast<uint64_t>(g.bytes > 0 ? g.bytes : 0));
  }
}

void Watches(MetricsText& t, const WatchStats& w) {
  Gauge(t, "skiff_watches_open", "Watches open now.", w.watches);
  Gauge(t, "skiff_watch_history_changes", "Changes held for watches that resume with since.",
        w.history_changes);
  Gauge(t, "skiff_watch_history_bytes", "Bytes of the changes held for since.", w.history_bytes);
  Gauge(t, "skiff_watch_queued_bytes", "Watch events waiting in connections' queues now.",
        w.queued_bytes);
  Counter(t, "skiff_watch_events_total", "Change events handed to connections.", w.events);
  Counter(t, "skiff_watch_coalesced_total", "Changes replaced by a newer one of their key.",
          w.coalesced);
  Counter(t, "skiff_watch_overflows_total",
          "Watches ended because their connection's queue was full.", w.overflows);
  Counter(t, "skiff_watch_resyncs_total", "Watches whose since was no longer held (resync).",
          w.resyncs);
  Counter(t, "skiff_watch_refused_total", "Watches refused for a limit.", w.refused);
}

}  // namespace

std::string RenderMetricsPage(const StatsFigures& f, const RequestMetrics& requests) {
  MetricsText t;
  t.Family("skiff_info", "gauge", "The server's store and durability; always 1.");
  t.Sample("skiff_info", {{"store", f.store}, {"durability", f.durability}}, uint64_t{1});
  Connections(t, f.network, f.sessions);
  Requests(t, requests);
  Limits(t, requests, f.limits ? f.limits->addresses_tracked : 0);
  Storage(t, f);
  Sync(t, f);
  Geo(t, f);
  Watches(t, f.watch.value_or(WatchStats()));
  if (f.cluster) {
    Gauge(t, "skiff_cluster_partitions_served", "Partitions this instance serves now.",
          f.cluster->partitions_served);
    Counter(t, "skiff_cluster_requests_relayed_total",
            "Requests relayed to the instance that owns their key.", f.cluster->requests_relayed);
  }
  return t.Take();
}

void AppendStoreErrors(std::string& page, uint64_t read_errors, uint64_t write_errors) {
  MetricsText t;
  t.Family("skiff_store_errors_total", "counter",
           "Store calls that failed (unavailable, internal or outcome_unknown), by call: read "
           "or write (document commits, sync commits and notifications).");
  t.Sample("skiff_store_errors_total", {{"call", "read"}}, read_errors);
  t.Sample("skiff_store_errors_total", {{"call", "write"}}, write_errors);
  page += t.text();
}

}  // namespace skiff::server::internal
