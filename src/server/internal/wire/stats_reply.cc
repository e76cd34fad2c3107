#include "server/internal/wire/stats_reply.h"

#include <utility>

#include "doc/document.h"
#include "server/internal/wire/replies.h"

namespace skiff::server::internal {

std::string EncodeStatsReply(uint64_t id, const StatsFigures& f) {
  doc::Value geo = doc::Value::object();
  for (const GeoTableStats& g : f.geo) {
    geo[g.table] = {{"reads", g.reads},
                    {"points", g.points},
                    {"unindexed", g.unindexed},
                    {"bytes", g.bytes},
                    {"bytes_per_point", g.points == 0 ? 0.0 : double(g.bytes) / double(g.points)},
                    {"rebuild_ms", g.rebuild_ms}};
  }
  const ListenerStats& network = f.network;
  // Objects keep their members sorted (doc::FlatObject), so the reply lists
  // them by name whatever the order here.
  doc::Value fields = {
      {"tiers",
       {{"hot", {{"documents", f.tiers.hot.documents}, {"bytes", f.tiers.hot.bytes}}},
        {"packed", {{"documents", f.tiers.packed.documents}, {"bytes", f.tiers.packed.bytes}}},
        {"evicted", {{"documents", f.tiers.evictions}}}}},
      {"connections", network.connections},
      {"network",
       {{"accepted", network.accepted},
        {"refused", network.refused},
        {"max_connections", network.max_connections},
        {"descriptor_exhaustion", network.descriptor_exhaustion},
        {"handshake_failures", network.handshake_failures},
        {"tls_failures", network.tls_failures},
        {"protocol_errors", network.protocol_errors},
        {"frame_timeouts", network.frame_timeouts},
        {"send_timeouts", network.send_timeouts},
        {"idle_closes", network.idle_closes},
        {"paused", network.paused},
        {"health_checks", network.health_checks},
        {"batched_sends", network.batched_sends},
        {"batch_system_calls", network.batch_system_calls},
        {"buffered_input_bytes", network.buffered_input_bytes},
        {"buffered_output_bytes", network.buffered_output_bytes},
        {"max_buffered_bytes", network.max_buffered_bytes}}},
      {"sessions", f.sessions},
      {"durability", std::string(f.durability)},
      {"store", std::string(f.store)},
      {"transactions", f.commits.transactions},
      {"writes", f.commits.writes},
      // Statements the store ran since start: lets a benchmark count a
      // server in another process (skiffd) the way it counts one in-process.
      {"store_statements", f.store_statements},
      {"sync",
       {{"cursor", f.sync_cursor},
        {"pushes", f.sync.pushes},
        {"waits_held", f.sync.waits_held},
        {"waits_woken", f.sync.waits_woken},
        {"waits_expired", f.sync.waits_expired},
        // Cluster mode: reads of the groups other instances moved (one
        // store statement each).
        {"catch_ups", f.sync.catch_ups},
        // Bootstrap pages read before they were asked for, those a request
        // was answered from, those not read for want of room, and the bytes
        // kept now (bootstrap_read_ahead.h).
        {"pages_read_ahead", f.pages_read_ahead},
        {"pages_from_read_ahead", f.pages_from_read_ahead},
        {"read_ahead_refused", f.read_ahead_refused},
        {"read_ahead_bytes", f.read_ahead_bytes}}},
      {"geo", std::move(geo)},
  };
  if (f.limits) {
    // Refusals of the per-user and per-address limits (rate_limited).
    fields["limits"] = {{"refused_user_rate", f.limits->refused_user_rate},
                        {"refused_user_connections", f.limits->refused_user_connections},
                        {"refused_failed_logins", f.limits->refused_failed_logins},
                        {"failed_logins", f.limits->failed_logins},
                        {"addresses_tracked", f.limits->addresses_tracked}};
  }
  if (f.watch) {
    // Watches: open now, the last version numbered, the changes held for
    // `since` and their bytes, events waiting in connections' queues, and
    // since start the watches opened, change events sent, changes
    // coalesced, watches ended by overflow, resyncs and refusals.
    const WatchStats& w = *f.watch;
    fields["watch"] = {{"watches", w.watches},
                       {"version", w.version},
                       {"history_changes", w.history_changes},
                       {"history_bytes", w.history_bytes},
                       {"queued_bytes", w.queued_bytes},
                       {"opened", w.opened},
                       {"events", w.events},
                       {"coalesced", w.coalesced},
                       {"overflows", w.overflows},
                       {"resyncs", w.resyncs},
                       {"refused", w.refused}};
  }
  if (f.cluster) {
    fields["cluster"] = {{"instance", f.cluster->instance},
                         {"partitions_served", f.cluster->partitions_served}};
  }
  return EncodeOk(id, fields);
}

}  // namespace skiff::server::internal
