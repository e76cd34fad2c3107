#include "support/private_postgres.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pqxx/pqxx>
#include <pwd.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include "support/skiffd_process.h"

namespace skiff::support {
namespace {

// The newest /usr/lib/postgresql/N/bin that has initdb and pg_ctl.
std::string FindBin() {
  std::vector<std::string> dirs;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/usr/lib/postgresql", ec)) {
    const std::string bin = entry.path().string() + "/bin";
    if (access((bin + "/initdb").c_str(), X_OK) == 0 &&
        access((bin + "/pg_ctl").c_str(), X_OK) == 0)
      dirs.push_back(bin);
  }
  std::sort(dirs.begin(), dirs.end(), [](const std::string& a, const std::string& b) {
    return a.size() != b.size() ? a.size() > b.size() : a > b;
  });
  return dirs.empty() ? "" : dirs.front();
}

// True when nothing on 127.0.0.1 uses `port`: bind fails for a listening
// socket, a connected one and one in TIME_WAIT alike.
bool PortFree(uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool free = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  close(fd);
  return free;
}

// Below the kernel's ephemeral range, so outgoing connections never get it.
uint16_t PickPort() {
  int low = 32768;
  std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range");
  range >> low;
  const int top = std::max(low, 12000);
  std::random_device entropy;
  std::uniform_int_distribution<int> pick(10000, top - 1);
  for (int attempt = 0; attempt < 200; ++attempt) {
    const auto port = static_cast<uint16_t>(pick(entropy));
    if (PortFree(port)) return port;
  }
  return 0;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace

Result<std::unique_ptr<PrivatePostgres>> PrivatePostgres::Start(
    const std::vector<std::string>& settings) {
  std::unique_ptr<PrivatePostgres> pg(new PrivatePostgres());
  pg->bin_ = FindBin();
  if (pg->bin_.empty()) {
    return Unavailable("no PostgreSQL binaries under /usr/lib/postgresql (apt install postgresql)");
  }
  pg->settings_ = settings;
  pg->data_ = pg->dir_.File("data");
  pg->as_postgres_ = geteuid() == 0;
  if (pg->as_postgres_) {
    const passwd* user = getpwnam("postgres");
    if (user == nullptr) return Unavailable("running as root and there is no 'postgres' user");
    if (chown(pg->dir_.path().c_str(), user->pw_uid, user->pw_gid) != 0) {
      return Unavailable("cannot hand the cluster's directory to 'postgres'");
    }
  }
  SKIFF_RETURN_IF_ERROR(pg->RunPg({pg->bin_ + "/initdb", "-D", pg->data_, "-U", "skiff",
                                   "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C.UTF-8"}));
  Status started = Unavailable("no free port");
  for (int attempt = 0; attempt < 5 && !started.ok(); ++attempt) {
    pg->port_ = PickPort();
    if (pg->port_ == 0) break;
    started = pg->StartServer();
  }
  SKIFF_RETURN_IF_ERROR(started);
  pg->url_ = "postgresql://skiff@127.0.0.1:" + std::to_string(pg->port_) + "/postgres";
  SKIFF_RETURN_IF_ERROR(pg->Exec("CREATE DATABASE skiff"));
  pg->url_ = "postgresql://skiff@127.0.0.1:" + std::to_string(pg->port_) + "/skiff";
  return pg;
}

PrivatePostgres::~PrivatePostgres() {
  if (!running_) return;
  (void)Thaw();  // a frozen postmaster cannot be stopped
  (void)Stop("immediate");
}

Status PrivatePostgres::RunPg(const std::vector<std::string>& argv) {
  std::vector<std::string> full;
  if (as_postgres_) full = {"/usr/sbin/runuser", "-u", "postgres", "--"};
  full.insert(full.end(), argv.begin(), argv.end());
  const int rc = RunCommand(full);
  if (rc != 0) {
    return Unavailable(argv.front() + " failed (exit " + std::to_string(rc) +
                       "); server log: " + ReadFile(dir_.File("server.log")));
  }
  return Status::Ok();
}

Status PrivatePostgres::StartServer() {
  std::string options = "-c listen_addresses=127.0.0.1 -c unix_socket_directories='' -p " +
                        std::to_string(port_) + " -c fsync=off -c max_connections=100";
  for (const std::string& s : settings_) options += " -c " + s;
  Status s = RunPg({bin_ + "/pg_ctl", "-D", data_, "-l", dir_.File("server.log"), "-w", "-t", "60",
                    "-o", options, "start"});
  running_ = s.ok();
  return s;
}

Status PrivatePostgres::Stop(const std::string& mode) {
  if (!running_) return Status::Ok();
  Status s = RunPg({bin_ + "/pg_ctl", "-D", data_, "-m", mode, "-w", "-t", "60", "stop"});
  if (s.ok()) running_ = false;
  return s;
}

Status PrivatePostgres::Restart() {
  if (running_) return Internal("the server is running");
  return StartServer();
}

std::vector<pid_t> PrivatePostgres::ClusterPids() const {
  std::vector<pid_t> pids;
  std::ifstream pidfile(data_ + "/postmaster.pid");
  pid_t postmaster = 0;
  if (!(pidfile >> postmaster) || postmaster <= 0) return pids;
  pids.push_back(postmaster);
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string stat = ReadFile(entry.path().string() + "/stat");
    const size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    // ") S PPID ..."
    const long ppid = std::strtol(stat.c_str() + close + 4, nullptr, 10);
    if (ppid == postmaster) pids.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return pids;
}

Status PrivatePostgres::Freeze() {
  const std::vector<pid_t> pids = ClusterPids();
  if (pids.empty()) return Internal("no postmaster to freeze");
  for (pid_t pid : pids) kill(pid, SIGSTOP);
  return Status::Ok();
}

Status PrivatePostgres::Thaw() {
  for (pid_t pid : ClusterPids()) kill(pid, SIGCONT);
  return Status::Ok();
}

Status PrivatePostgres::Exec(const std::string& sql) {
  try {
    pqxx::connection conn(url_);
    pqxx::nontransaction tx(conn);
    tx.exec(sql);
    return Status::Ok();
  } catch (const std::exception& e) {
    return Unavailable(std::string("PostgreSQL: ") + e.what());
  }
}

Result<std::string> PrivatePostgres::Query(const std::string& sql) {
  try {
    pqxx::connection conn(url_);
    pqxx::nontransaction tx(conn);
    pqxx::result r = tx.exec(sql);
    if (r.empty() || r[0][0].is_null()) return std::string();
    return std::string(r[0][0].c_str());
  } catch (const std::exception& e) {
    return Unavailable(std::string("PostgreSQL: ") + e.what());
  }
}

}  // namespace skiff::support
