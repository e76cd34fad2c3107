// skiff: administration of a Skiff store (users, their permissions, their
// sync groups, and the tables' geo indexes).
// It opens the store directly, so run it where the store is reachable. It
// works while skiffd runs on the same store: it opens without the instance
// lock that keeps a second skiffd out (store::OpenOptions::exclusive), which
// is safe because it writes only the $users, $groups and $geo tables, which
// the server never writes: it reads the first two at each login and $geo
// when it starts.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cmd/call.h"
#include "cmd/health.h"
#include "server/geo_catalog.h"
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
    "      Reading covers get, has, all and near; writing covers set, delete, add and\n"
    "      merge. Writing does not imply reading.\n"
    "  user set NAME [--read TABLES] [--write TABLES]\n"
    "      Replaces a user's permissions (an omitted list becomes empty).\n"
    "  user delete NAME\n"
    "      Removes a user; connections already logged in keep their session.\n"
    "  geo add TABLE --lat PATH --lon PATH | --point PATH\n"
    "      Declares TABLE's geo index for the near op: each document's position\n"
    "      is two number fields, or one GeoJSON Point {\"type\":\"Point\",\n"
    "      \"coordinates\":[lon,lat]}. PATH is field names joined by '.'\n"
    "      (pos.lat). Documents without a usable position are stored but not\n"
    "      indexed. skiffd builds the index from the stored documents when it\n"
    "      starts: restart it to apply a change.\n"
    "  geo delete TABLE\n"
    "      Removes TABLE's geo index (at skiffd's next start).\n"
    "  geo list\n"
    "      Prints each declared index: TABLE, then what it reads.\n"
    "  health [--url ws://HOST:PORT/] [--timeout-ms MS]\n"
    "      Pings a running skiffd (default: the one $SKIFF_ADDRESS and $SKIFF_PORT\n"
    "      name, else ws://127.0.0.1:7420/); exits 0 when it answers, 1 when not.\n"
    "      A container's HEALTHCHECK runs it.\n";

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

// `geo add TABLE --lat PATH --lon PATH | --point PATH`, `geo delete TABLE`,
// `geo list`.
int RunGeo(const std::string& store_url, const std::vector<std::string>& words,
           const std::string& lat, const std::string& lon, const std::string& point) {
  const std::string verb = words.size() > 1 ? words[1] : "";
  const size_t want = verb == "list" ? 2 : 3;
  if ((verb != "add" && verb != "delete" && verb != "list") || words.size() != want) {
    return Usage(
        "expected 'geo add TABLE --lat PATH --lon PATH', 'geo add TABLE --point PATH', "
        "'geo delete TABLE' or 'geo list'");
  }
  if (verb != "add" && (!lat.empty() || !lon.empty() || !point.empty())) {
    return Usage("--lat, --lon and --point go with 'geo add'");
  }
  skiff::server::GeoSpec spec;
  if (verb == "add") {
    spec.table = words[2];
    for (auto [text, path] :
         {std::pair{&lat, &spec.lat}, std::pair{&lon, &spec.lon}, std::pair{&point, &spec.point}}) {
      if (text->empty()) continue;
      auto parsed = skiff::server::ParseGeoPath(*text);
      if (!parsed.ok()) return Fail(parsed.status());
      *path = std::move(*parsed);
    }
  }
  auto store = OpenShared(store_url);
  if (!store.ok()) return Fail(store.status());
  if (verb == "list") {
    auto specs = skiff::server::ListGeoIndexes(**store);
    if (!specs.ok()) return Fail(specs.status());
    for (const skiff::server::GeoSpec& s : *specs) {
      std::printf("%s\t%s\n", s.table.c_str(), skiff::server::DescribeGeoSpec(s).c_str());
    }
    return 0;
  }
  const skiff::Status st = verb == "add" ? skiff::server::AddGeoIndex(**store, spec)
                                         : skiff::server::DeleteGeoIndex(**store, words[2]);
  if (!st.ok()) return Fail(st);
  std::fprintf(stderr, "skiff: %s; a running skiffd applies it when it next starts\n",
               verb == "add" ? "geo index declared" : "geo index removed");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && args[0] == "call")
    return skiff::cmd::RunCall({args.begin() + 1, args.end()});
  if (!args.empty() && args[0] == "health")
    return skiff::cmd::RunHealth({args.begin() + 1, args.end()});
  const char* env_store = std::getenv("SKIFF_STORE");
  std::string store_url = env_store != nullptr ? env_store : "sqlite:./skiff.db";
  std::string read;
  std::string write;
  std::string lat;
  std::string lon;
  std::string point;
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
    if (a == "--store" || a == "--read" || a == "--write" || a == "--lat" || a == "--lon" ||
        a == "--point") {
      if (!has_inline && i + 1 >= args.size()) return Usage(a + " needs a value");
      std::string& target = a == "--store"   ? store_url
                            : a == "--read"  ? read
                            : a == "--write" ? write
                            : a == "--lat"   ? lat
                            : a == "--lon"   ? lon
                                             : point;
      target = has_inline ? inline_value : args[++i];
    } else if (a.rfind("--", 0) == 0) {
      return Usage("unknown flag '" + a + "'");
    } else {
      words.push_back(a);
    }
  }
  if (!words.empty() && words[0] == "group") return RunGroup(store_url, words);
  if (!words.empty() && words[0] == "geo") return RunGeo(store_url, words, lat, lon, point);
  if (words.size() < 3 || words[0] != "user") {
    return Usage("expected 'user add|set|delete NAME', 'group add|grant|revoke ...' or 'geo ...'");
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
