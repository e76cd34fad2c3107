#include "support/postgres_backends_cpu.h"

#include <fstream>
#include <iterator>
#include <utility>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pqxx/pqxx>
#include <sys/socket.h>

#include "support/process.h"

namespace skiff::support {
namespace {

// The client port of `conn`'s socket; 0 when it is not TCP.
int LocalPort(const pqxx::connection& conn) {
  sockaddr_storage addr{};
  socklen_t size = sizeof addr;
  if (getsockname(conn.sock(), reinterpret_cast<sockaddr*>(&addr), &size) != 0) return 0;
  if (addr.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in&>(addr).sin_port);
  if (addr.ss_family == AF_INET6) {
    return ntohs(reinterpret_cast<const sockaddr_in6&>(addr).sin6_port);
  }
  return 0;
}

std::string CommandLine(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline");
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

struct PostgresBackendsCpu::Connection {
  explicit Connection(const std::string& url) : conn(url) {}
  pqxx::connection conn;
};

PostgresBackendsCpu::PostgresBackendsCpu(std::unique_ptr<Connection> conn)
    : conn_(std::move(conn)) {}

PostgresBackendsCpu::~PostgresBackendsCpu() = default;

Result<std::unique_ptr<PostgresBackendsCpu>> PostgresBackendsCpu::Open(const std::string& url) {
  try {
    auto conn = std::make_unique<Connection>(url);
    const int port = LocalPort(conn->conn);
    if (port == 0) return Unavailable("PostgreSQL's backends: not a TCP connection, cannot check");
    // A backend's process title names its client, "... 127.0.0.1(PORT) ...":
    // finding this connection's port there proves the pid is this
    // machine's (a container's pids are its own).
    const auto pid = static_cast<pid_t>(conn->conn.backendpid());
    const std::string title = CommandLine(pid);
    if (title.find("(" + std::to_string(port) + ")") == std::string::npos) {
      return Unavailable("PostgreSQL's backends are not this machine's processes (pid " +
                         std::to_string(pid) + " is '" + title + "')");
    }
    return std::unique_ptr<PostgresBackendsCpu>(new PostgresBackendsCpu(std::move(conn)));
  } catch (const std::exception& e) {
    return Unavailable(std::string("PostgreSQL's backends: ") + e.what());
  }
}

Result<PostgresBackendsCpu::Sample> PostgresBackendsCpu::Take() {
  Sample sample;
  try {
    pqxx::nontransaction tx(conn_->conn);
    const pqxx::result r = tx.exec(
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
        "AND backend_type = 'client backend' AND pid <> pg_backend_pid()");
    for (const auto& row : r) {
      const auto pid = static_cast<pid_t>(row[0].as<int>());
      sample[pid] = CpuSecondsOf(pid);
    }
  } catch (const std::exception& e) {
    return Unavailable(std::string("PostgreSQL's backends: ") + e.what());
  }
  return sample;
}

double PostgresBackendsCpu::Ran(const Sample& from, const Sample& to) {
  double seconds = 0;
  for (const auto& [pid, before] : from) {
    const auto after = to.find(pid);
    if (after != to.end() && after->second >= before) seconds += after->second - before;
  }
  return seconds;
}

}  // namespace skiff::support
