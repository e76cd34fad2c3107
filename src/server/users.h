// Users: accounts kept in the store's "$users" system table, and login.
//
// A user's secret is 32 random bytes shown once (as 64 hex digits) when the
// user is created; the store keeps only a per-user random salt and a keyed
// BLAKE2b hash (libsodium crypto_generichash) of the secret. A slow password
// hash (Argon2) exists to make guessing low-entropy human passwords costly;
// these secrets have 256 bits of entropy, so guessing is hopeless anyway and a
// fast hash keeps login cheap. Hashes are compared in constant time.
//
// Sync groups: a group exists once created (a record in "$groups"); a user's
// groups are a list in their "$users" record, read at login with the rest.
// Functions are thread-safe when the Store is (every Store is).
#ifndef SKIFF_SERVER_USERS_H_
#define SKIFF_SERVER_USERS_H_

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "server/permissions.h"
#include "store/store.h"

namespace skiff::server {

inline constexpr std::string_view kUsersTable = "$users";
inline constexpr std::string_view kGroupsTable = "$groups";

// What a login yields: table permissions and sync groups.
struct Account {
  Permissions permissions;
  std::vector<std::string> groups;
};

// OK when `name` matches [A-Za-z0-9_-]{1,64}; bad_request otherwise.
Status ValidateUserName(std::string_view name);

// Creates user `name` with `permissions` and returns the generated secret.
// bad_request when the name is invalid or the user exists; unavailable when
// the store fails.
Result<std::string> CreateUser(store::Store& store, std::string_view name,
                               const Permissions& permissions);

// Replaces the permissions of an existing user; bad_request when missing.
Status SetPermissions(store::Store& store, std::string_view name, const Permissions& permissions);

// Removes a user; bad_request when missing.
Status DeleteUser(store::Store& store, std::string_view name);

// The permissions of `name` when `secret` is theirs. unauthorized (with the
// same message whether the user is unknown or the secret wrong) otherwise;
// unavailable or internal when the store fails or the record is corrupt.
Result<Permissions> Authenticate(store::Store& store, std::string_view name,
                                 std::string_view secret);
// Authenticate, also returning the user's sync groups (one store read).
Result<Account> AuthenticateAccount(store::Store& store, std::string_view name,
                                    std::string_view secret);

// Creates sync group `group` (named like a table). bad_request when the name
// is invalid or the group exists.
Status CreateGroup(store::Store& store, std::string_view group);
// Adds `user` to `group`; bad_request when either is missing. Granting a
// group the user has is a no-op. Takes effect at the user's next login.
Status GrantGroup(store::Store& store, std::string_view user, std::string_view group);
// Removes `user` from `group`; bad_request when the user is missing.
Status RevokeGroup(store::Store& store, std::string_view user, std::string_view group);
// The sync groups of `user`; bad_request when the user is missing.
Result<std::vector<std::string>> UserGroups(store::Store& store, std::string_view user);

}  // namespace skiff::server

#endif  // SKIFF_SERVER_USERS_H_
