#include "server/users.h"

#include <array>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>
#include <sodium.h>

#include "doc/names.h"

namespace skiff::server {
namespace {

constexpr size_t kSecretBytes = 32;
constexpr size_t kSaltBytes = crypto_generichash_KEYBYTES;  // 32
constexpr size_t kHashBytes = crypto_generichash_BYTES;     // 32

std::string ToHex(const unsigned char* data, size_t n) {
  std::string hex(n * 2 + 1, '\0');
  sodium_bin2hex(hex.data(), hex.size(), data, n);
  hex.pop_back();
  return hex;
}

std::optional<std::vector<unsigned char>> FromHex(std::string_view hex, size_t n) {
  std::vector<unsigned char> bin(n);
  size_t len = 0;
  if (hex.size() != n * 2 ||
      sodium_hex2bin(bin.data(), n, hex.data(), hex.size(), nullptr, &len, nullptr) != 0 ||
      len != n) {
    return std::nullopt;
  }
  return bin;
}

std::array<unsigned char, kHashBytes> HashSecret(std::string_view secret,
                                                 const unsigned char* salt) {
  std::array<unsigned char, kHashBytes> out{};
  crypto_generichash(out.data(), out.size(), reinterpret_cast<const unsigned char*>(secret.data()),
                     secret.size(), salt, kSaltBytes);
  return out;
}

Status InitSodium() {
  // sodium_init is idempotent and thread-safe; 1 means "already done".
  if (sodium_init() < 0) return Internal("libsodium failed to initialise");
  return Status::Ok();
}

nlohmann::json PermissionsJson(const Permissions& p) {
  return {{"read", p.read()}, {"write", p.write()}};
}

Result<nlohmann::json> LoadRecord(store::Store& store, std::string_view name) {
  SKIFF_ASSIGN_OR_RETURN(std::optional<std::string> text, store.Get(kUsersTable, name));
  if (!text.has_value()) return BadRequest("no user named '" + std::string(name) + "'");
  nlohmann::json record = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!record.is_object()) return Internal("user record of '" + std::string(name) + "' is corrupt");
  return record;
}

}  // namespace

Status ValidateUserName(std::string_view name) {
  if (name.empty() || name.size() > 64) return BadRequest("user name must be 1 to 64 characters");
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-';
    if (!ok) return BadRequest("user name may hold only letters, digits, '_' and '-'");
  }
  return Status::Ok();
}

Result<std::string> CreateUser(store::Store& store, std::string_view name,
                               const Permissions& permissions) {
  SKIFF_RETURN_IF_ERROR(ValidateUserName(name));
  SKIFF_RETURN_IF_ERROR(InitSodium());
  SKIFF_ASSIGN_OR_RETURN(std::optional<std::string> existing, store.Get(kUsersTable, name));
  if (existing.has_value()) return BadRequest("user '" + std::string(name) + "' already exists");

  std::array<unsigned char, kSecretBytes> secret_bytes{};
  std::array<unsigned char, kSaltBytes> salt{};
  randombytes_buf(secret_bytes.data(), secret_bytes.size());
  randombytes_buf(salt.data(), salt.size());
  std::string secret = ToHex(secret_bytes.data(), secret_bytes.size());
  sodium_memzero(secret_bytes.data(), secret_bytes.size());
  auto hash = HashSecret(secret, salt.data());

  nlohmann::json record = PermissionsJson(permissions);
  record["salt"] = ToHex(salt.data(), salt.size());
  record["hash"] = ToHex(hash.data(), hash.size());
  SKIFF_RETURN_IF_ERROR(store.Put(kUsersTable, name, record.dump()));
  return secret;
}

Status SetPermissions(store::Store& store, std::string_view name, const Permissions& permissions) {
  SKIFF_ASSIGN_OR_RETURN(nlohmann::json record, LoadRecord(store, name));
  nlohmann::json p = PermissionsJson(permissions);
  record["read"] = p["read"];
  record["write"] = p["write"];
  return store.Put(kUsersTable, name, record.dump());
}

Status DeleteUser(store::Store& store, std::string_view name) {
  Result<nlohmann::json> record = LoadRecord(store, name);
  if (!record.ok()) return record.status();
  return store.Delete(kUsersTable, name);
}

Result<Permissions> Authenticate(store::Store& store, std::string_view name,
                                 std::string_view secret) {
  SKIFF_ASSIGN_OR_RETURN(Account account, AuthenticateAccount(store, name, secret));
  return std::move(account.permissions);
}

Result<Account> AuthenticateAccount(store::Store& store, std::string_view name,
                                    std::string_view secret) {
  const Status denied = Unauthorized("unknown user or wrong secret");
  if (!ValidateUserName(name).ok()) return denied;
  SKIFF_RETURN_IF_ERROR(InitSodium());
  SKIFF_ASSIGN_OR_RETURN(std::optional<std::string> text, store.Get(kUsersTable, name));
  if (!text.has_value()) return denied;
  nlohmann::json record = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  auto field = [&](const char* key) -> const nlohmann::json* {
    auto it = record.is_object() ? record.find(key) : record.end();
    return it == record.end() ? nullptr : &*it;
  };
  const nlohmann::json* salt_hex = field("salt");
  const nlohmann::json* hash_hex = field("hash");
  const nlohmann::json* read = field("read");
  const nlohmann::json* write = field("write");
  if (!salt_hex || !hash_hex || !salt_hex->is_string() || !hash_hex->is_string() || !read ||
      !write || !read->is_array() || !write->is_array()) {
    return Internal("user record of '" + std::string(name) + "' is corrupt");
  }
  auto salt = FromHex(salt_hex->get_ref<const std::string&>(), kSaltBytes);
  auto stored = FromHex(hash_hex->get_ref<const std::string&>(), kHashBytes);
  if (!salt || !stored) return Internal("user record of '" + std::string(name) + "' is corrupt");
  auto hash = HashSecret(secret, salt->data());
  if (sodium_memcmp(hash.data(), stored->data(), kHashBytes) != 0) return denied;

  std::vector<std::string> lists[2];
  const nlohmann::json* sources[2] = {read, write};
  for (int i = 0; i < 2; ++i) {
    for (const nlohmann::json& t : *sources[i]) {
      if (!t.is_string()) return Internal("user record of '" + std::string(name) + "' is corrupt");
      lists[i].push_back(t.get<std::string>());
    }
  }
  Account account;
  account.permissions = Permissions(std::move(lists[0]), std::move(lists[1]));
  // Records written before groups existed have no list: no groups.
  if (const nlohmann::json* groups = field("groups"); groups != nullptr) {
    if (!groups->is_array()) {
      return Internal("user record of '" + std::string(name) + "' is corrupt");
    }
    for (const nlohmann::json& g : *groups) {
      if (!g.is_string()) return Internal("user record of '" + std::string(name) + "' is corrupt");
      account.groups.push_back(g.get<std::string>());
    }
  }
  return account;
}

Status CreateGroup(store::Store& store, std::string_view group) {
  SKIFF_RETURN_IF_ERROR(doc::ValidateTableName(group));
  SKIFF_ASSIGN_OR_RETURN(std::optional<std::string> existing, store.Get(kGroupsTable, group));
  if (existing.has_value()) return BadRequest("group '" + std::string(group) + "' already exists");
  return store.Put(kGroupsTable, group, "{}");
}

Result<std::vector<std::string>> UserGroups(store::Store& store, std::string_view user) {
  SKIFF_ASSIGN_OR_RETURN(nlohmann::json record, LoadRecord(store, user));
  std::vector<std::string> groups;
  auto it = record.find("groups");
  if (it == record.end()) return groups;
  if (!it->is_array()) return Internal("user record of '" + std::string(user) + "' is corrupt");
  for (const nlohmann::json& g : *it) {
    if (!g.is_string()) return Internal("user record of '" + std::string(user) + "' is corrupt");
    groups.push_back(g.get<std::string>());
  }
  return groups;
}

Status GrantGroup(store::Store& store, std::string_view user, std::string_view group) {
  SKIFF_RETURN_IF_ERROR(doc::ValidateTableName(group));
  SKIFF_ASSIGN_OR_RETURN(std::optional<std::string> exists, store.Get(kGroupsTable, group));
  if (!exists.has_value()) return BadRequest("no group named '" + std::string(group) + "'");
  SKIFF_ASSIGN_OR_RETURN(nlohmann::json record, LoadRecord(store, user));
  SKIFF_ASSIGN_OR_RETURN(std::vector<std::string> groups, UserGroups(store, user));
  for (const std::string& g : groups) {
    if (g == group) return Status::Ok();
  }
  groups.emplace_back(group);
  record["groups"] = groups;
  return store.Put(kUsersTable, user, record.dump());
}

Status RevokeGroup(store::Store& store, std::string_view user, std::string_view group) {
  SKIFF_ASSIGN_OR_RETURN(nlohmann::json record, LoadRecord(store, user));
  SKIFF_ASSIGN_OR_RETURN(std::vector<std::string> groups, UserGroups(store, user));
  std::erase(groups, std::string(group));
  record["groups"] = groups;
  return store.Put(kUsersTable, user, record.dump());
}

}  // namespace skiff::server
