// The near op's refusals through a real server: who may ask (read
// permission on the table; writing is not enough), and every kind of bad
// input gets bad_request with a message that names the problem, after which
// the connection and the server carry on.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "test/server/geo_fixture.h"
#include "test/status_matchers.h"

namespace skiff::testing {
namespace {

using doc::Value;

class GeoNearInputTest : public GeoFixture {
 protected:
  void SetUp() override {
    GeoFixture::SetUp();
    Declare("places");
    Declare("secret");
    client::Client& c = Alice();
    ASSERT_OK(c.Set("places", "a", Point(1, 2)));
    ASSERT_OK(c.Set("secret", "s", Point(1, 2)));
  }

  client::Client& User(const std::string& name, const server::Permissions& permissions) {
    Result<std::string> secret = server::CreateUser(*store_, name, permissions);
    EXPECT_OK(secret);
    return Connect(ClientOptionsFor(name, secret.ok() ? *secret : ""));
  }
};

TEST_F(GeoNearInputTest, NeedsReadPermissionOnTheTable) {
  client::Client& reader = User("reader", server::Permissions({"places"}, {}));
  client::Client& writer = User("writer", server::Permissions({}, {"places", "secret"}));
  const Value at_secret = {{"table", "secret"}, {"lat", 1}, {"lon", 2}};
  const Value at_places = {{"table", "places"}, {"lat", 1}, {"lon", 2}};
  auto refused = Near(reader, at_secret);
  EXPECT_EQ(refused.status().code(), StatusCode::kForbidden);
  EXPECT_NE(refused.status().message().find("may not read table 'secret'"), std::string::npos)
      << refused.status().message();
  // Write-only: refused too, even on the table it writes.
  EXPECT_EQ(Near(writer, at_places).status().code(), StatusCode::kForbidden);
  EXPECT_EQ(Near(writer, at_secret).status().code(), StatusCode::kForbidden);
  auto allowed = Near(reader, at_places);
  ASSERT_OK(allowed);
  EXPECT_EQ(Keys(*allowed), std::vector<std::string>{"a"});
  // Not logged in.
  client::Client& anonymous = Connect(ClientOptionsFor("", ""));
  EXPECT_EQ(Near(anonymous, at_places).status().code(), StatusCode::kUnauthorized);
}

TEST_F(GeoNearInputTest, BadInputGetsBadRequestWithAClearMessage) {
  client::Client& c = Alice();
  struct Case {
    Value request;
    std::string message;  // a part of the expected message
  };
  auto with = [](Value patch) {
    Value r = {{"table", "places"}, {"lat", 1}, {"lon", 2}};
    r.merge_patch(patch);
    return r;
  };
  const std::vector<Case> cases = {
      {with({{"table", "nothing"}}), "table 'nothing' has no geo index"},
      {with({{"table", "bad table!"}}), "field 'table'"},
      {with({{"table", 5}}), "field 'table' must be a string"},
      {Value{{"table", "places"}, {"lon", 2}}, "missing field 'lat'"},
      {Value{{"table", "places"}, {"lat", 2}}, "missing field 'lon'"},
      {with({{"lat", 90.5}}), "lat must be a number from -90 to 90"},
      {with({{"lat", -91}}), "lat must be a number from -90 to 90"},
      {with({{"lon", 180.01}}), "lon must be a number from -180 to 180"},
      {with({{"lon", -1e300}}), "lon must be a number from -180 to 180"},
      {with({{"lat", "1"}}), "field 'lat' must be a number"},
      {with({{"lon", true}}), "field 'lon' must be a number"},
      {with({{"limit", 0}}), "field 'limit' must be an integer from 1 to 10000"},
      {with({{"limit", 10001}}), "field 'limit' must be an integer from 1 to 10000"},
      {with({{"limit", -3}}), "field 'limit' must be an integer from 1 to 10000"},
      {with({{"limit", 2.5}}), "field 'limit' must be an integer from 1 to 10000"},
      {with({{"limit", "10"}}), "field 'limit' must be an integer from 1 to 10000"},
      {with({{"radius_m", 0}}), "radius_m must be a positive number of metres"},
      {with({{"radius_m", -5}}), "radius_m must be a positive number of metres"},
      {with({{"radius_m", "far"}}), "field 'radius_m' must be a number"},
      {with({{"box_m", {0, 10}}}), "box_m sides must be positive numbers of metres"},
      {with({{"box_m", {10, -1}}}), "box_m sides must be positive numbers of metres"},
      {with({{"box_m", {10}}}), "field 'box_m' must be [width, height]"},
      {with({{"box_m", {10, 10, 10}}}), "field 'box_m' must be [width, height]"},
      {with({{"box_m", 10}}), "field 'box_m' must be [width, height]"},
      {with({{"box_m", {"10", 10}}}), "field 'box_m' must be [width, height]"},
      {with({{"values", "yes"}}), "field 'values' must be true or false"},
      {with({{"columns", 1}}), "field 'columns' must be true or false"},
  };
  for (const Case& k : cases) {
    auto reply = Near(c, k.request);
    ASSERT_FALSE(reply.ok()) << k.request.dump();
    EXPECT_EQ(reply.status().code(), StatusCode::kBadRequest) << k.request.dump();
    EXPECT_NE(reply.status().message().find(k.message), std::string::npos)
        << k.request.dump() << ": " << reply.status().message();
  }
  // Still serving, the same connection included.
  EXPECT_OK(c.Ping());
  auto ok = Near(c, with({{"limit", 10000}, {"radius_m", 1e9}, {"box_m", {1e9, 1e9}}}));
  ASSERT_OK(ok);
  EXPECT_EQ(Keys(*ok), std::vector<std::string>{"a"});
}

TEST_F(GeoNearInputTest, CatalogRefusesBadDeclarations) {
  server::GeoSpec both{"places", {"lat"}, {"lon"}, {"p"}};
  EXPECT_EQ(server::AddGeoIndex(*store_, both).code(), StatusCode::kBadRequest);
  server::GeoSpec half{"places", {"lat"}, {}, {}};
  EXPECT_EQ(server::AddGeoIndex(*store_, half).code(), StatusCode::kBadRequest);
  server::GeoSpec none{"places", {}, {}, {}};
  EXPECT_EQ(server::AddGeoIndex(*store_, none).code(), StatusCode::kBadRequest);
  server::GeoSpec bad_table{"no such!", {"lat"}, {"lon"}, {}};
  EXPECT_EQ(server::AddGeoIndex(*store_, bad_table).code(), StatusCode::kBadRequest);
  EXPECT_EQ(server::DeleteGeoIndex(*store_, "nothing").code(), StatusCode::kBadRequest);
  EXPECT_EQ(server::ParseGeoPath("a..b").status().code(), StatusCode::kBadRequest);
  EXPECT_EQ(server::ParseGeoPath("").status().code(), StatusCode::kBadRequest);
  auto path = server::ParseGeoPath("pos.lat");
  ASSERT_OK(path);
  EXPECT_EQ(*path, (doc::Path{"pos", "lat"}));
  auto listed = server::ListGeoIndexes(*store_);
  ASSERT_OK(listed);
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_EQ((*listed)[0].table, "places");
  EXPECT_EQ((*listed)[1].table, "secret");
}

}  // namespace
}  // namespace skiff::testing
