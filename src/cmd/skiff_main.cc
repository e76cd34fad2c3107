// skiff: administration of a Skiff store (users, their permissions and their
// sync groups).
// It opens the store directly, so run it where the store is reachable. It
// works while skiffd runs on the same store: it opens without the instance
// lock that keeps a second skiffd out (store::OpenOptions::exclusive), which
// is safe because it writes only the $users and $groups tables, which the
// server never writes and reads from the store at each login.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "cmd/call.h"
#include "server/permissions.h"
#include "server/users.h"
#include "store/store.h"

namespace {

constexpr const char* kUsage =
    "Usage: skiff [--store URL] COMMAND\n"
    "\n"
    "  --store URL   memory:, sqlite:PATH or postgres://... (default: $SKIFF_STORE,\n"
    "                else sqlite:./skiff.db)\n"
    "\n"
    "Commands:\n"
    "  user add NAME [--read TABLES] [--write TABLES]\n"
    "      Creates a user and prints its secret once; only a salted hash is kept.\n"
    "      TABLES is a comma-separated list of table names or * for every table.\n"
    "      Reading covers get, has and all; writing covers set, delete, add and\n"
    "      merge. Writing does not imply reading.\n"
    "  user set NAME [--read TABLES] [--write TABLES]\n"
    "      Replaces a user's permissions (an omitted list becomes empty).\n"
    "  user delete NAME\n"
    "      Removes a user; connections already logged in keep their session.\n";

void PrintUsage(FILE* out) {
  std::fputs(kUsage, out);
  std::fputs(skiff::cmd::kCallUsage, out);
}

// Shared with a running skiffd: see the opening comment.
skiff::Result<std::unique_ptr<skiff::store::Store>> OpenShared(const std::string& url) {
  skiff::store::OpenOptions options;
  options.exclusive = false;
  return skiff::store::OpenStore(url, options);
}

int Fail(const skiff::Status& status) {
  std::fprintf(stderr, "skiff: %s\n", status.ToString().c_str());
  return 1;
}

int Usage(const std::string& problem) {
  std::fprintf(stderr, "skiff: %s\n\n", problem.c_str());
  PrintUsage(stderr);
  return 64;
}

// `group add GROUP`, `group grant USER GROUP`, `group revoke USER GROUP`.
int RunGroup(const std::string& store_url, const std::vector<std::string>& words) {
  const std::string verb = words.size() > 1 ? words[1] : "";
  const size_t want = verb == "add" ? 3 : 4;
  if ((verb != "add" && verb != "grant" && verb != "revoke") || words.size() != want) {
    return Usage("expected 'group add GROUP' or 'group grant|revoke USER GROUP'");
  }
  auto store = OpenShared(store_url);
  if (!store.ok()) return Fail(store.status());
  skiff::Status st;
  if (verb == "add") {
    st = skiff::server::CreateGroup(**store, words[2]);
  } else if (verb == "grant") {
    st = skiff::server::GrantGroup(**store, words[2], words[3]);
  } else {
    st = skiff::server::RevokeGroup(**store, words[2], words[3]);
  }
  return st.ok() ? 0 : Fail(st);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && args[0] == "call")
    return skiff::cmd::RunCall({args.begin() + 1, args.end()});
  const char* env_store = std::getenv("SKIFF_STORE");
  std::string store_url = env_store != nullptr ? env_store : "sqlite:./skiff.db";
  std::string read;
  std::string write;
  std::vector<std::string> words;
  for (size_t i = 0; i < args.size(); ++i) {
    // --name=value is --name value.
    std::string a = args[i];
    std::string inline_value;
    bool has_inline = false;
    if (const size_t eq = a.find('='); a.rfind("--", 0) == 0 && eq != std::string::npos) {
      inline_value = a.substr(eq + 1);
      a.resize(eq);
      has_inline = true;
    }
    if (a == "--help" || a == "-h") {
      PrintUsage(stdout);
      return 0;
    }
    if (a == "--store" || a == "--read" || a == "--write") {
      if (!has_inline && i + 1 >= args.size()) return Usage(a + " needs a value");
      std::string& target = a == "--store" ? store_url : a == "--read" ? read : write;
      target = has_inline ? inline_value : args[++i];
    } else if (a.rfind("--", 0) == 0) {
      return Usage("unknown flag '" + a + "'");
    } else {
      words.push_back(a);
    }
  }
  if (!words.empty() && words[0] == "group") return RunGroup(store_url, words);
  if (words.size() < 3 || words[0] != "user") {
    return Usage("expected 'user add|set|delete NAME' or 'group add|grant|revoke ...'");
  }
  const std::string& verb = words[1];
  const std::string& name = words[2];
  if (words.size() > 3) return Usage("unexpected argument '" + words[3] + "'");

  auto read_list = skiff::server::ParseTableList(read);
  if (!read_list.ok()) return Fail(read_list.status());
  auto write_list = skiff::server::ParseTableList(write);
  if (!write_list.ok()) return Fail(write_list.status());
  skiff::server::Permissions permissions(*read_list, *write_list);

  auto store = OpenShared(store_url);
  if (!store.ok()) return Fail(store.status());
  if (verb == "add") {
    auto secret = skiff::server::CreateUser(**store, name, permissions);
    if (!secret.ok()) return Fail(secret.status());
    std::printf("%s\n", secret->c_str());
    std::fprintf(stderr, "skiff: created user '%s'; the secret above is shown only once\n",
                 name.c_str());
    return 0;
  }
  if (verb == "set") {
    skiff::Status st = skiff::server::SetPermissions(**store, name, permissions);
    return st.ok() ? 0 : Fail(st);
  }
  if (verb == "delete") {
    skiff::Status st = skiff::server::DeleteUser(**store, name);
    return st.ok() ? 0 : Fail(st);
  }
  return Usage("unknown command 'user " + verb + "'");
}
