#include "support/stack.h"

#include <random>

#include <sys/resource.h>

#include "base/clock.h"
#include "server/server.h"
#include "server/users.h"
#include "support/e2e_options.h"
#include "support/losing_add_handler.h"
#include "support/process.h"
#include "support/temp_dir.h"
#include "support/test_certs.h"
#include "support/test_store.h"

namespace skiff::bench {
namespace {

constexpr char kUser[] = "bench";

// Each connection costs a descriptor on each side; cases with thousands of
// connections need the hard limit, not the default soft one.
void RaiseDescriptorLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
}

std::string Unquote(std::string_view text) {
  if (text.size() >= 2 && text.front() == '"' && text.back() == '"') {
    text = text.substr(1, text.size() - 2);
  }
  return std::string(text);
}

}  // namespace

class Stack::Impl {
 public:
  explicit Impl(const StackOptions& options) : options_(options) {}

  ~Impl() {
    child_.reset();  // before its store goes
    if (server_) (void)server_->Stop();
    server_.reset();
  }

  Status Start() {
    if (!options_.url.empty()) return Attach();
    if (!options_.bun.empty()) {
      return StartPeer(
          {options_.bun, "run", std::string(SKIFF_SOURCE_DIR) + "/bench/peers/kv_peer.ts"},
          "bun-peer", "the Bun peer");
    }
    if (!options_.floor.empty()) return StartPeer({options_.floor}, "floor", "the floor peer");
    auto durability = server::DurabilityFromName(options_.durability);
    if (!durability) return BadRequest("unknown durability '" + options_.durability + "'");
    auto opened = support::TestStore::Open(options_.store);
    if (!opened.ok()) return opened.status();
    store_ = std::move(*opened);
    Result<std::string> secret = server::CreateUser(
        store_->store(), kUser,
        server::Permissions({std::string(server::kAllTables)}, {std::string(server::kAllTables)}));
    if (!secret.ok()) return secret.status();
    for (const server::GeoSpec& spec : options_.geo_indexes) {
      SKIFF_RETURN_IF_ERROR(server::AddGeoIndex(store_->store(), spec));
    }
    user_ = kUser;
    secret_ = *secret;
    host_ = "127.0.0.1";
    store_kind_ = options_.store;
    durability_ = options_.durability;
    if (options_.server == "child" || options_.server == "child-tls") return StartChild();
    if (options_.server != "inprocess")
      return BadRequest("unknown server '" + options_.server + "'");
    server::ServerOptions so;
    so.address = host_;
    so.port = 0;
    so.io_threads = options_.io_threads;
    so.durability = *durability;
    // The lost update the verdict test needs; never in a measured run.
    server::Server::HandlerWrap wrap;
    if (const uint32_t n = options_.drop_one_add_in; n > 0) {
      wrap = [n](server::internal::ListenerHandler& handler) {
        return std::make_unique<LosingAddHandler>(handler, n);
      };
    }
    auto started = server::Server::Start(so, store_->store(), clock_, std::move(wrap));
    if (!started.ok()) return started.status();
    server_ = std::move(*started);
    port_ = server_->port();
    where_ = "in-process";
    return Status::Ok();
  }

  Result<std::unique_ptr<LoadDriver>> Connect(size_t connections, size_t pipeline,
                                              std::chrono::milliseconds timeout, bool login) const {
    DriverOptions o = Target();
    o.connections = connections;
    o.pipeline = pipeline;
    o.timeout = timeout;
    if (!login) o.user.clear(), o.secret.clear();
    return LoadDriver::Connect(o);
  }

  DriverOptions Target() const {
    DriverOptions o;
    o.host = host_;
    o.port = port_;
    o.user = user_;
    o.secret = secret_;
    o.tls = tls_;
    o.tls_ca = tls_ca_;
    o.insecure = insecure_;
    return o;
  }

  std::optional<double> ServerCpuSeconds() const {
    if (child_) return child_->CpuSeconds();
    if (server_) return support::ProcessCpuSeconds();
    return std::nullopt;
  }

  // The store users are written to: the server's own when it runs here, a
  // short-lived second connection when a child owns it.
  template <typename Fn>
  auto WithStore(Fn fn) -> decltype(fn(std::declval<store::Store&>())) {
    if (!store_) return BadRequest("an attached or peer server's users are not ours to change");
    if (store_->is_open()) return fn(store_->store());
    auto opened = store::OpenStore(store_->url());
    if (!opened.ok()) return opened.status();
    return fn(**opened);
  }

  Status Restart() {
    if (!child_) return BadRequest("only a child server can be restarted");
    Result<int> stopped = child_->Stop(std::chrono::seconds(60));
    if (!stopped.ok()) return stopped.status();
    if (*stopped != 0) return Internal("skiffd exited with status " + std::to_string(*stopped));
    return StartChild();
  }

  Status Stop() {
    if (child_) {
      Result<int> stopped = child_->Stop(std::chrono::seconds(60));
      child_.reset();
      // The peer keeps nothing, so how it ends says nothing about the run;
      // skiffd's exit status is its final flush.
      if (store_kind_ == "bun-peer" || store_kind_ == "floor") return Status::Ok();
      if (!stopped.ok()) return stopped.status();
      if (*stopped != 0) return Internal("skiffd exited with status " + std::to_string(*stopped));
      return Status::Ok();
    }
    if (!server_) return Status::Ok();
    Status s = server_->Stop();
    server_.reset();
    return s;
  }

  const StackOptions options_;
  SystemClock clock_;
  std::unique_ptr<support::TestStore> store_;
  std::unique_ptr<server::Server> server_;
  std::unique_ptr<support::Process> child_;
  std::string host_;
  uint16_t port_ = 0;
  std::string user_;
  std::string secret_;
  std::string store_kind_;
  std::string durability_;
  std::string where_;
  bool tls_ = false;
  std::string tls_ca_;
  bool insecure_ = false;
  // child-tls: the certificates' directory, kept while the child may
  // restart.
  std::unique_ptr<support::TempDir> cert_dir_;
  support::TestCertFiles certs_;
  const uint32_t table_nonce_ = std::random_device()();
  uint32_t tables_ = 0;

 private:
  // Starts `argv` and reads the line that says where it listens.
  // With `wss`, the line must also say that the port serves TLS.
  Status StartListening(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                        const char* what, bool wss = false) {
    auto child = std::make_unique<support::Process>();
    SKIFF_RETURN_IF_ERROR(child->Start(argv, env));
    Result<std::string> line = child->ReadLine(std::chrono::seconds(30));
    child->CloseOutput();
    port_ = line.ok() ? support::PortOfListeningLine(*line) : 0;
    if (wss && line.ok() && line->find("scheme=wss") == std::string::npos) port_ = 0;
    if (port_ == 0) {
      return Unavailable(std::string(what) + " did not start: " +
                         (line.ok() ? "it said '" + *line + "'" : line.status().ToString()));
    }
    child_ = std::move(child);
    return Status::Ok();
  }

  Status StartChild() {
#ifndef SKIFF_SKIFFD_PATH
    return BadRequest("this build has no skiffd to start as a child");
#else
    if (options_.store == "memory") {
      return BadRequest("--server=child needs a store the child can open (sqlite, postgres)");
    }
    if (options_.drop_one_add_in > 0) return BadRequest("drop_one_add_in is in-process only");
    store_->Close();  // the child opens it; the TestStore still owns its files
    std::vector<std::string> argv = {options_.skiffd.empty() ? SKIFF_SKIFFD_PATH : options_.skiffd,
                                     "--store=" + store_->url(),
                                     "--address=" + host_,
                                     "--port=0",
                                     "--durability=" + options_.durability,
                                     "--io-threads=" + std::to_string(options_.io_threads)};
    if (options_.server == "child-tls") {
      if (!cert_dir_) {  // a restart keeps the same certificates
        cert_dir_ = std::make_unique<support::TempDir>();
        certs_ = support::WriteTestCertificates(cert_dir_->path().string());
      }
      argv.push_back("--tls-cert=" + certs_.cert);
      argv.push_back("--tls-key=" + certs_.key);
      tls_ = true;
      tls_ca_ = certs_.ca;
    }
    argv.insert(argv.end(), options_.child_flags.begin(), options_.child_flags.end());
    SKIFF_RETURN_IF_ERROR(StartListening(argv, {}, "skiffd", tls_));
    where_ = "child pid " + std::to_string(child_->pid()) + (tls_ ? " (wss)" : "");
    return Status::Ok();
#endif
  }

  // A peer of bench/peers/ as a child process: `kind` names it in the
  // results ("bun-peer", "floor").
  Status StartPeer(const std::vector<std::string>& argv, const std::string& kind,
                   const char* what) {
    char secret[40];
    snprintf(secret, sizeof secret, "%08x%08x", std::random_device()(), std::random_device()());
    host_ = "127.0.0.1";
    SKIFF_RETURN_IF_ERROR(
        StartListening(argv, {"PORT=0", std::string("SKIFF_PEER_SECRET=") + secret}, what));
    user_ = kUser;
    secret_ = secret;
    store_kind_ = kind;
    durability_ = "none";
    where_ = kind + " pid " + std::to_string(child_->pid());
    return Status::Ok();
  }

  Status Attach() {
    if (!ParseWsUrl(options_.url, &host_, &port_, &tls_)) {
      return BadRequest("--url takes ws://HOST:PORT or wss://HOST:PORT, not '" + options_.url +
                        "'");
    }
    if (!tls_ && (options_.insecure || !options_.tls_ca.empty())) {
      return BadRequest("--tls-ca and --insecure are for a wss:// --url");
    }
    tls_ca_ = options_.tls_ca;
    insecure_ = options_.insecure;
    if (options_.user.empty()) return BadRequest("--url needs --user and --secret");
    user_ = options_.user;
    secret_ = options_.secret;
    where_ = options_.url;
    // Ask the server what it runs on, for the results' context.
    auto driver = Connect(1, 1, std::chrono::seconds(10), true);
    if (!driver.ok()) return driver.status();
    Result<std::string> stats = (*driver)->Call("\"op\":\"stats\"");
    if (!stats.ok()) return stats.status();
    store_kind_ = Unquote(ReplyMember(*stats, "store"));
    durability_ = Unquote(ReplyMember(*stats, "durability"));
    return Status::Ok();
  }
};

Result<std::unique_ptr<Stack>> Stack::Start(const StackOptions& options) {
  RaiseDescriptorLimit();
  auto impl = std::make_unique<Impl>(options);
  SKIFF_RETURN_IF_ERROR(impl->Start());
  return std::unique_ptr<Stack>(new Stack(std::move(impl)));
}

Stack::Stack(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Stack::~Stack() = default;

Result<std::unique_ptr<LoadDriver>> Stack::Connect(size_t connections, size_t pipeline,
                                                   std::chrono::milliseconds timeout,
                                                   bool login) const {
  return impl_->Connect(connections, pipeline, timeout, login);
}

DriverOptions Stack::Target() const { return impl_->Target(); }
uint16_t Stack::port() const { return impl_->port_; }
const std::string& Stack::user() const { return impl_->user_; }
const std::string& Stack::secret() const { return impl_->secret_; }

store::Store* Stack::local_store() {
  return impl_->server_ && impl_->store_ && impl_->store_->is_open() ? &impl_->store_->store()
                                                                     : nullptr;
}

Result<std::string> Stack::CreateUser(const std::string& name,
                                      const server::Permissions& permissions) {
  return impl_->WithStore(
      [&](store::Store& s) { return server::CreateUser(s, name, permissions); });
}

Status Stack::JoinGroup(const std::string& user, const std::string& group) {
  return impl_->WithStore([&](store::Store& s) -> Status {
    (void)server::CreateGroup(s, group);  // an existing group is fine
    return server::GrantGroup(s, user, group);
  });
}

std::string Stack::FreshTable(const std::string& stem) {
  char suffix[32];
  snprintf(suffix, sizeof suffix, "_%08x_%u", impl_->table_nonce_, impl_->tables_++);
  return "e2e_" + stem.substr(0, 40) + suffix;
}

std::optional<double> Stack::ServerCpuSeconds() const { return impl_->ServerCpuSeconds(); }
bool Stack::in_process() const { return impl_->server_ != nullptr; }
pid_t Stack::pid() const { return impl_->child_ ? impl_->child_->pid() : -1; }
bool Stack::tls() const { return impl_->tls_; }
Status Stack::Restart() { return impl_->Restart(); }
Status Stack::Stop() { return impl_->Stop(); }
const StackOptions& Stack::options() const { return impl_->options_; }
std::string Stack::store_kind() const { return impl_->store_kind_; }
std::string Stack::durability() const { return impl_->durability_; }
std::string Stack::where() const { return impl_->where_; }

}  // namespace skiff::bench
