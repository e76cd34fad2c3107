#include "client/internal/watch_registry.h"

#include <future>
#include <utility>
#include <vector>

namespace skiff::client::internal {
namespace {

uint64_t UnsignedOf(const doc::Value& v, const char* name) {
  auto it = v.find(name);
  return it != v.end() && it->is_number_unsigned() ? it->get<uint64_t>() : 0;
}

std::string StringOf(const doc::Value& v, const char* name) {
  auto it = v.find(name);
  return it != v.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

Result<uint64_t> WatchRegistry::Open(std::string table, const WatchTarget& target,
                                     WatchCallback on_event) {
  auto opened = std::make_shared<std::promise<Status>>();
  std::future<Status> reply = opened->get_future();
  uint64_t handle = 0;
  std::string request;
  {
    MutexLock lock(&mu_);
    handle = ++next_handle_;
    entries_[handle] = Entry{std::move(table), target, std::move(on_event)};
    request = RequestFor(entries_[handle]);
  }
  Send(handle, std::move(request),
       [opened](Status status) { opened->set_value(std::move(status)); });
  // The request has its own deadline, so the reply (or its failure) comes.
  Status status = reply.get();
  if (!status.ok()) {
    MutexLock lock(&mu_);
    entries_.erase(handle);
    return status;
  }
  return handle;
}

std::string WatchRegistry::RequestFor(const Entry& e) {
  doc::Value request = {{"op", "watch"}, {"table", e.table}};
  if (!e.target.key.empty()) request["key"] = e.target.key;
  if (!e.target.prefix.empty()) request["prefix"] = e.target.prefix;
  if (e.version != 0) {
    request["since"] = e.version;
  } else if (e.target.initial) {
    request["initial"] = true;
  }
  return request.dump();
}

void WatchRegistry::Send(uint64_t handle, std::string request, std::function<void(Status)> done) {
  std::weak_ptr<WatchRegistry> weak = weak_from_this();
  conn_.Submit(std::move(request),
               [weak, handle, done = std::move(done)](Result<doc::Value> reply) {
                 auto self = weak.lock();
                 if (!self) return;
                 if (reply.ok()) {
                   MutexLock lock(&self->mu_);
                   auto it = self->entries_.find(handle);
                   if (it != self->entries_.end()) {
                     it->second.server_id = UnsignedOf(*reply, "watch");
                     if (it->second.version == 0)
                       it->second.version = UnsignedOf(*reply, "version");
                     self->by_server_[it->second.server_id] = handle;
                   }
                 }
                 if (done) done(reply.ok() ? Status::Ok() : reply.status());
               });
}

Status WatchRegistry::Close(uint64_t handle) {
  uint64_t server_id = 0;
  {
    MutexLock lock(&mu_);
    auto it = entries_.find(handle);
    if (it == entries_.end()) return BadRequest("no watch " + std::to_string(handle));
    server_id = it->second.server_id;
    by_server_.erase(server_id);
    entries_.erase(it);
  }
  if (server_id == 0) return Status::Ok();  // not open on the server now
  std::promise<Status> closed;
  std::future<Status> reply = closed.get_future();
  doc::Value request = {{"op", "unwatch"}, {"watch", server_id}};
  conn_.Submit(request.dump(), [&closed](Result<doc::Value> r) {
    closed.set_value(r.ok() ? Status::Ok() : r.status());
  });
  Status status = reply.get();
  // Gone already on the server (ended, or the connection was lost): fine.
  return status.code() == StatusCode::kBadRequest ? Status::Ok() : status;
}

void WatchRegistry::OnEvent(const doc::Value& event) {
  WatchEvent e;
  e.kind = StringOf(event, "event");
  e.key = StringOf(event, "key");
  e.version = UnsignedOf(event, "version");
  e.reason = StringOf(event, "reason");
  e.message = StringOf(event, "message");
  if (auto it = event.find("value"); it != event.end()) e.value = *it;
  if (auto it = event.find("deleted"); it != event.end()) e.deleted = it->is_boolean() && *it;
  if (auto it = event.find("coalesced"); it != event.end()) e.coalesced = it->is_boolean() && *it;
  WatchCallback callback;
  uint64_t handle = 0;
  std::string again;
  {
    MutexLock lock(&mu_);
    auto found = by_server_.find(UnsignedOf(event, "watch"));
    if (found == by_server_.end()) return;  // unwatched meanwhile
    handle = found->second;
    Entry& entry = entries_.at(handle);
    // A resync starts the count again (the server may be a new run, its
    // versions from 1): resuming later goes on from there.
    if (e.kind == "resync" || e.version > entry.version) entry.version = e.version;
    callback = entry.on_event;
    if (e.kind == "ended") {
      by_server_.erase(found);
      entry.server_id = 0;
      // An overflow is the client's own slowness: resume where it was
      // (the server replays or says resync). Anything else ends it.
      if (e.reason == "overflow") {
        again = RequestFor(entry);
      } else {
        entries_.erase(handle);
      }
    }
  }
  callback(e);
  if (!again.empty()) Send(handle, std::move(again), nullptr);
}

void WatchRegistry::OnReconnected() {
  std::vector<std::pair<uint64_t, std::string>> again;
  {
    MutexLock lock(&mu_);
    by_server_.clear();
    for (auto& [handle, entry] : entries_) {
      entry.server_id = 0;
      again.emplace_back(handle, RequestFor(entry));
    }
  }
  for (auto& [handle, request] : again) Send(handle, std::move(request), nullptr);
}

}  // namespace skiff::client::internal
