#include "server/permissions.h"

#include <gtest/gtest.h>

#include "server/users.h"
#include "store/store.h"

#include "test/status_matchers.h"

namespace skiff::server {
namespace {

TEST(PermissionsTest, ListsAndWildcard) {
  Permissions p({"a", "b"}, {"b"});
  EXPECT_TRUE(p.CanRead("a"));
  EXPECT_TRUE(p.CanRead("b"));
  EXPECT_FALSE(p.CanRead("c"));
  EXPECT_FALSE(p.CanWrite("a"));  // writing does not follow from reading
  EXPECT_TRUE(p.CanWrite("b"));

  Permissions all({"*"}, {"*"});
  EXPECT_TRUE(all.CanRead("anything"));
  EXPECT_TRUE(all.CanWrite("anything"));
  EXPECT_FALSE(all.CanRead("$users"));  // system tables stay out of reach
  EXPECT_FALSE(all.CanWrite("$users"));

  EXPECT_FALSE(Permissions().CanRead("a"));
}

TEST(PermissionsTest, ParseTableList) {
  auto two = ParseTableList("a,b-c");
  ASSERT_OK(two);
  EXPECT_EQ(*two, (std::vector<std::string>{"a", "b-c"}));
  EXPECT_EQ(*ParseTableList("*"), (std::vector<std::string>{"*"}));
  EXPECT_TRUE(ParseTableList("")->empty());
  EXPECT_EQ(ParseTableList("a,").status().code(), StatusCode::kBadRequest);
  EXPECT_EQ(ParseTableList("a b").status().code(), StatusCode::kBadRequest);
  EXPECT_EQ(ParseTableList("$users").status().code(), StatusCode::kBadRequest);
}

TEST(UsersTest, CreateAuthenticateAndRefuse) {
  std::unique_ptr<store::Store> store = store::NewMemoryStore();
  Permissions p({"r"}, {"w"});
  Result<std::string> secret = CreateUser(*store, "ann", p);
  ASSERT_OK(secret);
  EXPECT_EQ(secret->size(), 64u);

  Result<Permissions> ok = Authenticate(*store, "ann", *secret);
  ASSERT_OK(ok);
  EXPECT_EQ(*ok, p);

  EXPECT_EQ(Authenticate(*store, "ann", "wrong").status().code(), StatusCode::kUnauthorized);
  EXPECT_EQ(Authenticate(*store, "nobody", *secret).status().code(), StatusCode::kUnauthorized);
  // Same message for both, so probing does not reveal which users exist.
  EXPECT_EQ(Authenticate(*store, "ann", "wrong").status(),
            Authenticate(*store, "nobody", "x").status());

  EXPECT_EQ(CreateUser(*store, "ann", p).status().code(), StatusCode::kBadRequest);
  EXPECT_EQ(CreateUser(*store, "bad name", p).status().code(), StatusCode::kBadRequest);

  // The stored record holds no secret.
  auto record = store->Get(kUsersTable, "ann");
  ASSERT_OK(record);
  ASSERT_TRUE(record->has_value());
  EXPECT_EQ((*record)->find(*secret), std::string::npos);
}

TEST(UsersTest, SetPermissionsAndDelete) {
  std::unique_ptr<store::Store> store = store::NewMemoryStore();
  Result<std::string> secret = CreateUser(*store, "ann", Permissions());
  ASSERT_OK(secret);
  ASSERT_OK(SetPermissions(*store, "ann", Permissions({"*"}, {})));
  EXPECT_TRUE(Authenticate(*store, "ann", *secret)->CanRead("x"));
  ASSERT_OK(DeleteUser(*store, "ann"));
  EXPECT_EQ(Authenticate(*store, "ann", *secret).status().code(), StatusCode::kUnauthorized);
  EXPECT_EQ(DeleteUser(*store, "ann").code(), StatusCode::kBadRequest);
}

}  // namespace
}  // namespace skiff::server
