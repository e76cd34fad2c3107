// The live-value ops of RequestHandler: watch and unwatch
// (docs/protocol.md, "watch / unwatch"). The hub (watch_hub.h) numbers,
// keeps and queues changes; here a watch is checked, opened and given its
// initial values.
#include <string>
#include <utility>
#include <vector>

#include "server/internal/request_handler.h"
#include "server/internal/wire/replies.h"

namespace skiff::server::internal {
namespace {

// The current values a watch follows, read from the store once every write
// applied before is in it (so nothing not yet durable is shown). Bounded:
// more than `max_bytes` of values is an error that says what to do.
Status ReadCurrent(store::Store& store, const WatchFilter& f, size_t max_bytes,
                   std::vector<std::pair<std::string, std::string>>* out) {
  size_t bytes = 0;
  auto keep = [&](std::string key, std::string value) -> Status {
    bytes += key.size() + value.size();
    if (bytes > max_bytes) {
      return TooLarge("the initial values are over " + std::to_string(max_bytes) +
                      " bytes; watch a narrower prefix, or read them with all");
    }
    out->emplace_back(std::move(key), std::move(value));
    return Status::Ok();
  };
  if (f.kind != WatchFilter::Kind::kTable) {
    SKIFF_ASSIGN_OR_RETURN(std::optional<std::string> value, store.Get(f.table, f.text));
    if (value) SKIFF_RETURN_IF_ERROR(keep(f.text, std::move(*value)));
    if (f.kind == WatchFilter::Kind::kKey) return Status::Ok();
  }
  // Keys come in order: a prefix's keys follow the prefix itself.
  std::string after = f.text;
  for (;;) {
    SKIFF_ASSIGN_OR_RETURN(store::ScanPage page, store.Scan(f.table, after, store::kMaxScanLimit));
    for (store::KeyValue& kv : page.items) {
      if (!f.Matches(kv.key)) return Status::Ok();
      SKIFF_RETURN_IF_ERROR(keep(std::move(kv.key), std::move(kv.value)));
    }
    if (!page.next) return Status::Ok();
    after = std::move(*page.next);
  }
}

}  // namespace

Status RequestHandler::Watch(Call& c) {
  const Request& r = c.r;
  if (!r.key.empty() && !r.prefix.empty()) {
    return BadRequest("watch takes at most one of key and prefix (neither: the whole table)");
  }
  WatchFilter filter;
  filter.table = r.table;
  if (!r.key.empty()) {
    filter.kind = WatchFilter::Kind::kKey;
    filter.text = r.key;
  } else if (!r.prefix.empty()) {
    filter.kind = WatchFilter::Kind::kPrefix;
    filter.text = r.prefix;
  }
  WatchHub& hub = documents_.watches();
  if (options_.cluster) {
    // Numbered by the cluster: once this returns, every change of the table
    // committed after the hub's version is in the cluster's log.
    SKIFF_RETURN_IF_ERROR(cluster_watch_(r.table));
  } else if (hub.Record(r.table)) {
    // Commit durability numbers a change when it commits, and a write made
    // before the table was recorded carries no value to publish: let every
    // such write commit first, so none lands after the watch's start.
    SKIFF_RETURN_IF_ERROR(documents_.Flush());
    hub.RecordedFrom(r.table);
  }
  SKIFF_ASSIGN_OR_RETURN(WatchHub::Opened opened,
                         hub.Open(c.conn, r.id, filter, r.since, r.initial));
  if (r.initial) {
    std::vector<std::pair<std::string, std::string>> values;
    Status read = documents_.Flush();
    if (read.ok()) read = ReadCurrent(store_, filter, options_.watch_queue_bytes, &values);
    if (read.ok()) {
      hub.Ready(*c.conn, opened.watch, values);
    } else {
      hub.Fail(*c.conn, opened.watch, read.message());
    }
  }
  hub.Deliver();
  return Status::Ok();
}

Status RequestHandler::Unwatch(Call& c) {
  WatchHub& hub = documents_.watches();
  SKIFF_RETURN_IF_ERROR(hub.Unwatch(*c.conn, c.r.watch, EncodeOk(c.r.id)));
  hub.DeliverOwn(*c.conn);  // on the connection's loop (not a store request)
  return Status::Ok();
}

}  // namespace skiff::server::internal
