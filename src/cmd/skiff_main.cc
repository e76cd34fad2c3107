// skiff: administration of a Skiff store (users, their permissions, their
// sync groups, and the tables' geo indexes).
// It opens the store directly, so run it where the store is reachable. It
// works while skiffd runs on the same store: it opens without the instance
// lock that keeps a second skiffd out (store::OpenOptions::exclusive), which
// is safe because it writes only the $users, $groups and $geo tables, which
// the server never writes: it reads the first two at each login and $geo
// when it starts.
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cmd/call.h"
#include "cmd/command_line.h"
#include "cmd/health.h"
#include "server/geo_catalog.h"
#include "server/permissions.h"
#include "server/users.h"
#include "store/store.h"

namespace {

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

// Everything the commands' tables bind; one command runs.
struct AdminArgs {
  std::string store_url = "sqlite:./skiff.db";
  std::string name;  // a user, a group or a table
  std::string group;
  std::string read;
  std::string write;
  std::string lat;
  std::string lon;
  std::string point;
};

// The commands (skiff's table): their arguments, options and help.
struct Commands {
  CLI::App* user_add;
  CLI::App* user_set;
  CLI::App* user_delete;
  CLI::App* group_add;
  CLI::App* group_grant;
  CLI::App* group_revoke;
  CLI::App* geo_add;
  CLI::App* geo_delete;
  CLI::App* geo_list;
  CLI::App* call;
  CLI::App* health;
};

Commands AddCommands(CLI::App& app, AdminArgs& a, skiff::cmd::CallRequest& call,
                     skiff::cmd::HealthRequest& health) {
  skiff::cmd::UseSkiffConventions(app);
  // --store may come after the command too (skiff user add alice --store ...).
  app.fallthrough();
  app.add_option("--store", a.store_url, "memory:, sqlite:PATH or postgres://...")
      ->envname("SKIFF_STORE")
      ->type_name("URL")
      ->capture_default_str();
  Commands c{};
  const auto permissions = [&a](CLI::App* command) {
    command->add_option("--read", a.read,
                        "comma-separated table names, or * for every table: get, has, all "
                        "and near");
    command->add_option("--write", a.write,
                        "the same for set, delete, add and merge; writing does not imply "
                        "reading");
  };
  CLI::App* user = app.add_subcommand("user", "users and their permissions");
  c.user_add = user->add_subcommand(
      "add", "Creates a user and prints its secret once; only a salted hash is kept");
  c.user_add->add_option("NAME", a.name, "the user")->required();
  permissions(c.user_add);
  c.user_set =
      user->add_subcommand("set", "Replaces a user's permissions (an omitted list becomes empty)");
  c.user_set->add_option("NAME", a.name, "the user")->required();
  permissions(c.user_set);
  c.user_delete = user->add_subcommand(
      "delete", "Removes a user; connections already logged in keep their session");
  c.user_delete->add_option("NAME", a.name, "the user")->required();
  user->require_subcommand(1);

  CLI::App* group = app.add_subcommand("group", "sync groups and their members");
  c.group_add = group->add_subcommand("add", "Creates a group");
  c.group_add->add_option("GROUP", a.group, "the group")->required();
  c.group_grant = group->add_subcommand("grant", "Makes a user a member of a group");
  c.group_revoke = group->add_subcommand("revoke", "Takes a user out of a group");
  for (CLI::App* command : {c.group_grant, c.group_revoke}) {
    command->add_option("USER", a.name, "the user")->required();
    command->add_option("GROUP", a.group, "the group")->required();
  }
  group->require_subcommand(1);

  CLI::App* geo = app.add_subcommand("geo", "the tables' geo indexes (skiffd reads them at start)");
  c.geo_add = geo->add_subcommand(
      "add",
      "Declares TABLE's geo index for the near op: each document's position is two number "
      "fields (--lat, --lon), or one GeoJSON Point {\"type\":\"Point\",\"coordinates\":[lon,"
      "lat]} (--point). PATH is field names joined by '.' (pos.lat). Documents without a "
      "usable position are stored but not indexed. Restart skiffd to apply a change.");
  c.geo_add->add_option("TABLE", a.name, "the table")->required();
  CLI::Option* lat =
      c.geo_add->add_option("--lat", a.lat, "the latitude's field")->type_name("PATH");
  CLI::Option* lon =
      c.geo_add->add_option("--lon", a.lon, "the longitude's field")->type_name("PATH");
  CLI::Option* point =
      c.geo_add->add_option("--point", a.point, "the GeoJSON Point's field")->type_name("PATH");
  lat->needs(lon);
  lon->needs(lat);
  point->excludes(lat)->excludes(lon);
  c.geo_delete =
      geo->add_subcommand("delete", "Removes TABLE's geo index (at skiffd's next start)");
  c.geo_delete->add_option("TABLE", a.name, "the table")->required();
  c.geo_list = geo->add_subcommand("list", "Prints each declared index: TABLE, then what it reads");
  geo->require_subcommand(1);

  c.call = skiff::cmd::AddCallCommand(app, call);
  c.health = skiff::cmd::AddHealthCommand(app, health);
  app.require_subcommand(1);
  return c;
}

int RunUser(const Commands& c, const AdminArgs& a) {
  auto read_list = skiff::server::ParseTableList(a.read);
  if (!read_list.ok()) return Fail(read_list.status());
  auto write_list = skiff::server::ParseTableList(a.write);
  if (!write_list.ok()) return Fail(write_list.status());
  skiff::server::Permissions permissions(*read_list, *write_list);

  auto store = OpenShared(a.store_url);
  if (!store.ok()) return Fail(store.status());
  if (c.user_add->parsed()) {
    auto secret = skiff::server::CreateUser(**store, a.name, permissions);
    if (!secret.ok()) return Fail(secret.status());
    std::printf("%s\n", secret->c_str());
    std::fprintf(stderr, "skiff: created user '%s'; the secret above is shown only once\n",
                 a.name.c_str());
    return 0;
  }
  skiff::Status st = c.user_set->parsed()
                         ? skiff::server::SetPermissions(**store, a.name, permissions)
                         : skiff::server::DeleteUser(**store, a.name);
  return st.ok() ? 0 : Fail(st);
}

int RunGroup(const Commands& c, const AdminArgs& a) {
  auto store = OpenShared(a.store_url);
  if (!store.ok()) return Fail(store.status());
  skiff::Status st;
  if (c.group_add->parsed()) {
    st = skiff::server::CreateGroup(**store, a.group);
  } else if (c.group_grant->parsed()) {
    st = skiff::server::GrantGroup(**store, a.name, a.group);
  } else {
    st = skiff::server::RevokeGroup(**store, a.name, a.group);
  }
  return st.ok() ? 0 : Fail(st);
}

int RunGeo(const Commands& c, const AdminArgs& a) {
  skiff::server::GeoSpec spec;
  if (c.geo_add->parsed()) {
    spec.table = a.name;
    for (auto [text, path] : {std::pair{&a.lat, &spec.lat}, std::pair{&a.lon, &spec.lon},
                              std::pair{&a.point, &spec.point}}) {
      if (text->empty()) continue;
      auto parsed = skiff::server::ParseGeoPath(*text);
      if (!parsed.ok()) return Fail(parsed.status());
      *path = std::move(*parsed);
    }
  }
  auto store = OpenShared(a.store_url);
  if (!store.ok()) return Fail(store.status());
  if (c.geo_list->parsed()) {
    auto specs = skiff::server::ListGeoIndexes(**store);
    if (!specs.ok()) return Fail(specs.status());
    for (const skiff::server::GeoSpec& s : *specs) {
      std::printf("%s\t%s\n", s.table.c_str(), skiff::server::DescribeGeoSpec(s).c_str());
    }
    return 0;
  }
  const bool add = c.geo_add->parsed();
  const skiff::Status st = add ? skiff::server::AddGeoIndex(**store, spec)
                               : skiff::server::DeleteGeoIndex(**store, a.name);
  if (!st.ok()) return Fail(st);
  std::fprintf(stderr, "skiff: %s; a running skiffd applies it when it next starts\n",
               add ? "geo index declared" : "geo index removed");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app(
      "Administration of a Skiff store (users, their permissions, their sync groups, the "
      "tables' geo indexes), opened directly beside a running skiffd; and requests to a "
      "running skiffd (call, health).",
      "skiff");
  AdminArgs args;
  skiff::cmd::CallRequest call;
  skiff::cmd::HealthRequest health;
  const Commands c = AddCommands(app, args, call, health);
  const int exit_code = skiff::cmd::ParseOrExitCode(
      app, std::vector<std::string>(argv + 1, argv + argc), std::cout, std::cerr);
  if (exit_code >= 0) {
    return exit_code == skiff::cmd::kUsageExit && c.health->parsed() ? skiff::cmd::kHealthUsageExit
                                                                     : exit_code;
  }
  if (c.call->parsed()) return skiff::cmd::RunCall(call);
  if (c.health->parsed()) return skiff::cmd::RunHealth(health);
  if (c.user_add->parsed() || c.user_set->parsed() || c.user_delete->parsed()) {
    return RunUser(c, args);
  }
  if (c.group_add->parsed() || c.group_grant->parsed() || c.group_revoke->parsed()) {
    return RunGroup(c, args);
  }
  return RunGeo(c, args);
}
