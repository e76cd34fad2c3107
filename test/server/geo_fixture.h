// The server fixture with a geo index: declares it in the store's catalog
// and restarts the server so that it builds the index, and asks `near`
// through a real client. Not thread-safe: drive it from the test's thread.
#ifndef SKIFF_TEST_SERVER_GEO_FIXTURE_H_
#define SKIFF_TEST_SERVER_GEO_FIXTURE_H_

#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "server/geo_catalog.h"

#include "test/server/server_fixture.h"
#include "test/status_matchers.h"

namespace skiff::testing {

struct NearItem {
  std::string key;
  double dist_m = 0;
  std::optional<doc::Value> value;
};

class GeoFixture : public ServerFixture {
 protected:
  // Declares `table`'s index on fields "lat" and "lon" (or `spec` as given)
  // and restarts the server, which builds it from the store.
  void Declare(std::string table) {
    server::GeoSpec spec;
    spec.table = std::move(table);
    spec.lat = {"lat"};
    spec.lon = {"lon"};
    Declare(spec);
  }
  void Declare(const server::GeoSpec& spec) {
    ASSERT_OK(server::AddGeoIndex(*store_, spec));
    Restart();
  }
  void Restart() {
    clients_.clear();
    StopServer();
    StartServer();
  }

  static doc::Value Point(double lat, double lon) { return {{"lat", lat}, {"lon", lon}}; }

  // The near reply's items, or the error. Every query is asked in both
  // forms, items and columns (parallel arrays), which must give the same
  // answer to the bit.
  static Result<std::vector<NearItem>> Near(client::Client& c, doc::Value request) {
    request["op"] = "near";
    SKIFF_ASSIGN_OR_RETURN(doc::Value reply, c.CallSync(request));
    std::vector<NearItem> items;
    for (const doc::Value& item : reply.at("items")) {
      NearItem n{item.at("key").get<std::string>(), item.at("dist_m").get<double>(), {}};
      // Distances come in whole micrometres (up to 2e13 of them; times 1e6
      // a double is then off by at most about 0.004).
      EXPECT_NEAR(n.dist_m * 1e6, std::round(n.dist_m * 1e6), 0.01) << n.key << " " << n.dist_m;
      if (item.contains("value")) n.value = item["value"];
      items.push_back(std::move(n));
    }
    request["columns"] = true;
    SKIFF_ASSIGN_OR_RETURN(doc::Value columns, c.CallSync(request));
    EXPECT_FALSE(columns.contains("items"));
    const doc::Value& keys = columns.at("keys");
    const doc::Value& dists = columns.at("dist_m");
    const bool values = request.value("values", false);
    EXPECT_EQ(columns.contains("values"), values);
    EXPECT_EQ(keys.size(), items.size());
    EXPECT_EQ(dists.size(), items.size());
    if (values) {
      EXPECT_EQ(columns.at("values").size(), items.size());
    }
    for (size_t i = 0; i < items.size() && i < keys.size() && i < dists.size(); ++i) {
      EXPECT_EQ(keys[i].get<std::string>(), items[i].key) << "item " << i;
      EXPECT_EQ(dists[i].get<double>(), items[i].dist_m) << "item " << i;
      if (values && i < columns["values"].size()) {
        EXPECT_EQ(columns["values"][i], items[i].value) << "item " << i;
      }
    }
    return items;
  }

  static std::vector<std::string> Keys(const std::vector<NearItem>& items) {
    std::vector<std::string> keys;
    for (const NearItem& i : items) keys.push_back(i.key);
    return keys;
  }

  // The near keys of `table` around (lat, lon), every point (limit 10,000).
  static std::vector<std::string> NearKeys(client::Client& c, const std::string& table, double lat,
                                           double lon) {
    auto items = Near(c, {{"table", table}, {"lat", lat}, {"lon", lon}, {"limit", 10000}});
    EXPECT_OK(items);
    return items.ok() ? Keys(*items) : std::vector<std::string>{};
  }

  static doc::Value GeoStats(client::Client& c, const std::string& table) {
    auto stats = c.Stats();
    EXPECT_OK(stats);
    return stats.ok() ? (*stats)["geo"][table] : doc::Value();
  }
};

}  // namespace skiff::testing

#endif  // SKIFF_TEST_SERVER_GEO_FIXTURE_H_
