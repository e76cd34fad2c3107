-- The geo benchmark's Tarantool peer (bench/geo_bench.cc starts it through
-- support/geo/tarantool_target.cc): one memtx space of points [id, [lon, lat]]
-- with a TREE primary key and an RTREE index on the point, the way the
-- hugedbbench 2023geo Tarantool schema has them.
--   tarantool geo_tarantool.lua PORT DATA_DIR
-- The guest user may read and write; the listener is on 127.0.0.1 only.
-- Prints one line once it listens.
local port = assert(arg[1], 'usage: geo_tarantool.lua PORT DATA_DIR')
local dir = assert(arg[2], 'usage: geo_tarantool.lua PORT DATA_DIR')

box.cfg{
  listen = '127.0.0.1:' .. port,
  work_dir = dir,
  log = dir .. '/tarantool.log',
  memtx_memory = 512 * 1024 * 1024,
  wal_mode = 'write',        -- the default: each commit written, not fsynced
  checkpoint_interval = 0,   -- no snapshots during a run
}

box.schema.user.grant('guest', 'read,write,execute', 'universe', nil, {if_not_exists = true})
local points = box.schema.space.create('geo_points', {id = 600, if_not_exists = true})
points:create_index('primary', {type = 'TREE', parts = {1, 'unsigned'}, if_not_exists = true})
points:create_index('spatial', {
  type = 'RTREE', unique = false, dimension = 2, parts = {2, 'array'}, if_not_exists = true,
})

io.stdout:write('tarantool listening on 127.0.0.1:' .. port .. '\n')
io.stdout:flush()
