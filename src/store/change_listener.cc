#include "store/change_listener.h"

#include <algorithm>
#include <charconv>
#include <cstdint>

#include <fcntl.h>
#include <poll.h>
#include <pqxx/pqxx>
#include <sys/eventfd.h>
#include <unistd.h>

#include "store/internal/pg_url.h"

namespace skiff::store {
namespace {

class CountingReceiver final : public pqxx::notification_receiver {
 public:
  CountingReceiver(pqxx::connection_base& conn, const std::string& channel,
                   ChangeListener::Event* event)
      : pqxx::notification_receiver(conn, channel), event_(event) {}
  void operator()(const std::string& payload, int) override {
    ++event_->notifications;
    uint64_t id = 0;  // a payload that does not parse names nothing
    std::from_chars(payload.data(), payload.data() + payload.size(), id);
    event_->last_sync_id = std::max(event_->last_sync_id, id);
  }

 private:
  ChangeListener::Event* event_;
};

class PostgresChangeListener final : public ChangeListener {
 public:
  PostgresChangeListener(std::string libpq_url, const char* channel_sql, int wake_fd)
      : url_(std::move(libpq_url)), channel_sql_(channel_sql), wake_fd_(wake_fd) {}
  ~PostgresChangeListener() override {
    Disconnect();
    close(wake_fd_);
  }

  Status Connect() {
    Disconnect();
    try {
      conn_ = std::make_unique<pqxx::connection>(url_);  // bounded by connect_timeout
      // Reconnecting is this class's job, so that it is never silent.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
      conn_->inhibit_reactivation(true);
#pragma GCC diagnostic pop
      std::string channel;
      {
        pqxx::nontransaction tx(*conn_);
        channel = tx.exec(std::string("SELECT ") + channel_sql_)[0][0].as<std::string>();
      }
      receiver_ = std::make_unique<CountingReceiver>(*conn_, channel, &received_);  // LISTEN
      pid_ = conn_->backendpid();
    } catch (const std::exception& e) {
      Disconnect();
      return Unavailable(std::string("cannot listen for notifications: ") + e.what());
    }
    return Status::Ok();
  }

  Result<Event> Wait(std::chrono::milliseconds timeout) override {
    Event event;
    if (!conn_) {
      SKIFF_RETURN_IF_ERROR(Connect());
      event.new_session = true;
      return event;
    }
    pollfd fds[2] = {{conn_->sock(), POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    const int ready = poll(fds, 2, static_cast<int>(std::max<int64_t>(timeout.count(), 0)));
    if (ready > 0 && (fds[1].revents & POLLIN) != 0) {
      uint64_t drained;
      (void)read(wake_fd_, &drained, sizeof drained);
    }
    if (ready > 0 && fds[0].revents != 0) {
      received_ = Event();
      try {
        conn_->get_notifs();  // reads the socket; throws when the session is gone
      } catch (const std::exception& e) {
        Disconnect();
        return Unavailable(std::string("notifications connection lost: ") + e.what());
      }
      event.notifications = received_.notifications;
      event.last_sync_id = received_.last_sync_id;
      if (!conn_->is_open()) {
        Disconnect();
        return Unavailable("notifications connection lost");
      }
      if (conn_->backendpid() != pid_) {  // reopened under us after all
        pid_ = conn_->backendpid();
        event.new_session = true;
      }
    }
    return event;
  }

  void Interrupt() override {
    const uint64_t one = 1;
    (void)write(wake_fd_, &one, sizeof one);
  }

 private:
  void Disconnect() {
    receiver_.reset();  // before its connection
    conn_.reset();
  }

  const std::string url_;
  const char* const channel_sql_;
  const int wake_fd_;  // an eventfd: Interrupt() makes it readable
  std::unique_ptr<pqxx::connection> conn_;
  std::unique_ptr<CountingReceiver> receiver_;
  Event received_;  // filled by receiver_ during get_notifs()
  int pid_ = 0;
};

}  // namespace

Result<std::unique_ptr<ChangeListener>> ChangeListener::Open(const std::string& url,
                                                             const char* channel_sql) {
  if (!url.starts_with("postgres://") && !url.starts_with("postgresql://")) {
    return BadRequest("notifications need PostgreSQL, not '" + url + "'");
  }
  SKIFF_ASSIGN_OR_RETURN(internal::PgUrl parsed, internal::ParsePgUrl(url, PostgresOptions()));
  const int wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd < 0) return Internal("eventfd failed");
  auto listener = std::make_unique<PostgresChangeListener>(parsed.libpq_url, channel_sql, wake_fd);
  SKIFF_RETURN_IF_ERROR(listener->Connect());
  return std::unique_ptr<ChangeListener>(std::move(listener));
}

}  // namespace skiff::store
