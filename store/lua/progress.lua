-- A worker reports progress and renews its lease on a running operation.
-- KEYS[1] op: the operation hash
-- KEYS[2] queue: the queue zset
-- ARGV[1] worker_id: worker id
-- ARGV[2] description: or ""
-- ARGV[3] now: ms
-- ARGV[4] lease: ms
-- ARGV[5] operation_id: operation id
-- Returns 1, or 0 when the operation is no longer this worker's.
local rec = redis.call('HMGET', KEYS[1], 'state', 'worker')
if rec[1] ~= 'running' or rec[2] ~= ARGV[1] then return 0 end
local until_ms = tonumber(ARGV[3]) + tonumber(ARGV[4])
redis.call('HSET', KEYS[1], 'lease_until', until_ms)
if ARGV[2] ~= '' then redis.call('HSET', KEYS[1], 'description', ARGV[2]) end
redis.call('ZADD', KEYS[2], until_ms, ARGV[5])
return 1
