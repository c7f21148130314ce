-- A worker reports progress and renews its lease on a running operation.
-- Returns 1, or 0 when the operation is no longer this worker's.
-- requires: fields (store/lua/lib/fields.lua: read_fields)
local KEY = {
  op = KEYS[1],     -- the operation hash
  queue = KEYS[2],  -- the queue zset
}
local ARG = {
  worker_id = ARGV[1],     -- worker id
  description = ARGV[2],   -- or ""
  now = ARGV[3],           -- ms
  lease = ARGV[4],         -- ms
  operation_id = ARGV[5],  -- operation id
}
local op = read_fields(KEY.op, {'state', 'worker'})
if op.state ~= 'running' or op.worker ~= ARG.worker_id then return 0 end
local until_ms = tonumber(ARG.now) + tonumber(ARG.lease)
redis.call('HSET', KEY.op, 'lease_until', until_ms)
if ARG.description ~= '' then redis.call('HSET', KEY.op, 'description', ARG.description) end
redis.call('ZADD', KEY.queue, until_ms, ARG.operation_id)
return 1
