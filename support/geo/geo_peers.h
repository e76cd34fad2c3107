// The geo benchmark's peers, each behind GeoTarget (geo_target.h):
//
//   redis            redis-server (Debian `redis-server`) as a child process:
//                    GEOADD / GEOSEARCH FROMLONLAT BYBOX ... ASC COUNT WITHDIST,
//                    through hiredis; no persistence
//   tarantool        tarantool (Debian `tarantool`) as a child process running
//                    bench/peers/geo_tarantool.lua: a memtx space with an
//                    RTREE index, SELECT with the NEIGHBOR iterator, through
//                    a minimal IPROTO client (iproto_client.h)
//   postgres-point   the test PostgreSQL (support/postgres.h), a database of
//                    its own: a `point` column with a GiST index, KNN
//                    `ORDER BY p <-> point(lon, lat)`; distances from
//                    earthdistance's `<@>`
//   postgis          the same database with PostGIS (Debian
//                    `postgresql-15-postgis-3`): `geography(Point, 4326)`,
//                    GiST, KNN `<->` (sphere distance)
//   sqlite-rtree     SQLite in this process, a file in a temp dir: an R*Tree
//                    table, box query ordered by a haversine SQL function
//   skiffd-STORE-DURABILITY
//                    skiffd itself, a child process (support/stack.h) on a
//                    fresh sqlite file or postgres schema in commit or memory
//                    durability: `set` and the `near` op with the box,
//                    one blocking WebSocket per connection (LoadDriver)
//
// Open* returns unavailable, with the Debian package to install, when the
// peer cannot run here; the benchmark then reports it missing.
#ifndef SKIFF_SUPPORT_GEO_GEO_PEERS_H_
#define SKIFF_SUPPORT_GEO_GEO_PEERS_H_

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "support/geo/geo_target.h"

namespace skiff::bench::geo {

Result<std::unique_ptr<GeoTarget>> OpenRedisTarget();
Result<std::unique_ptr<GeoTarget>> OpenTarantoolTarget();
Result<std::unique_ptr<GeoTarget>> OpenPostgresPointTarget();
Result<std::unique_ptr<GeoTarget>> OpenPostgisTarget();
Result<std::unique_ptr<GeoTarget>> OpenSqliteRtreeTarget();
// `store` is sqlite or postgres, `durability` commit or memory.
Result<std::unique_ptr<GeoTarget>> OpenSkiffdTarget(const std::string& store,
                                                    const std::string& durability);

}  // namespace skiff::bench::geo

#endif  // SKIFF_SUPPORT_GEO_GEO_PEERS_H_
