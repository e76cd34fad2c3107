#include "server/internal/wire/sync_replies.h"

#include "server/internal/wire/json_text.h"

namespace skiff::server::internal {
namespace {

void AppendHead(std::string& out, uint64_t id) {
  out += "{\"id\":";
  out += std::to_string(id);
  out += ",\"ok\":true";
}

}  // namespace

std::string EncodePushReply(uint64_t id, const sync::PushReply& reply) {
  std::string out;
  AppendHead(out, id);
  out += ",\"applied\":" + std::to_string(reply.applied);
  out += ",\"last_seq\":" + std::to_string(reply.last_seq);
  out += ",\"cursor\":" + std::to_string(reply.cursor);
  out += '}';
  return out;
}

std::string EncodePullReply(uint64_t id, const sync::PullReply& reply) {
  std::string out;
  size_t bytes = 64;
  for (const store::Change& c : reply.changes) {
    bytes += 64 + c.table.size() + c.key.size() + c.group.size() + (c.value ? c.value->size() : 4);
  }
  out.reserve(bytes);
  AppendHead(out, id);
  out += ",\"changes\":[";
  for (size_t i = 0; i < reply.changes.size(); ++i) {
    const store::Change& c = reply.changes[i];
    if (i > 0) out += ',';
    out += "{\"sync_id\":" + std::to_string(c.sync_id) + ",\"table\":";
    AppendJsonString(out, c.table);
    out += ",\"key\":";
    AppendJsonString(out, c.key);
    out += ",\"group\":";
    AppendJsonString(out, c.group);
    out += ",\"value\":";
    out += c.value ? *c.value : "null";
    out += '}';
  }
  out += "],\"cursor\":" + std::to_string(reply.cursor);
  out += reply.more ? ",\"more\":true}" : ",\"more\":false}";
  return out;
}

std::string EncodeBootstrapReply(uint64_t id, const sync::BootstrapReply& reply) {
  std::string out;
  size_t bytes = 64;
  for (const store::SyncRow& row : reply.rows) {
    bytes += 64 + row.group.size() + row.table.size() + row.key.size() + row.value.size();
  }
  out.reserve(bytes);
  AppendHead(out, id);
  out += ",\"cursor\":" + std::to_string(reply.cursor) + ",\"next\":";
  if (reply.next) {
    out += '[';
    AppendJsonString(out, reply.next->group);
    out += ',';
    AppendJsonString(out, reply.next->table);
    out += ',';
    AppendJsonString(out, reply.next->key);
    out += ']';
  } else {
    out += "null";
  }
  out += ",\"rows\":[";
  for (size_t i = 0; i < reply.rows.size(); ++i) {
    const store::SyncRow& row = reply.rows[i];
    if (i > 0) out += ',';
    out += "{\"group\":";
    AppendJsonString(out, row.group);
    out += ",\"table\":";
    AppendJsonString(out, row.table);
    out += ",\"key\":";
    AppendJsonString(out, row.key);
    out += ",\"value\":";
    out += row.value;
    out += ",\"sync_id\":";
    out += std::to_string(row.sync_id);
    out += '}';
  }
  out += "]}";
  return out;
}

std::string EncodeWaitReply(uint64_t id, const sync::WaitReply& reply) {
  std::string out;
  AppendHead(out, id);
  out += reply.changed ? ",\"changed\":true" : ",\"changed\":false";
  out += ",\"cursor\":" + std::to_string(reply.cursor) + "}";
  return out;
}

}  // namespace skiff::server::internal
