-- A worker gives an operation back without an outcome (it is stopping, or the operation passed
-- its deadline): queued again and due at once, so the recovery loop resends it to another worker.
-- The state a previous step saved (resume) stays: the next claim runs the step again from it.
-- KEYS[1] op: the operation hash
-- KEYS[2] queue: the queue zset
-- ARGV[1] worker_id: worker id
-- ARGV[2] now: ms
-- ARGV[3] operation_id: operation id
-- Returns 1, or 0 when the operation is not this worker's.
-- requires: history (store/lua/lib/history.lua: add_history)
local rec = redis.call('HMGET', KEYS[1], 'state', 'worker')
if rec[1] ~= 'running' or rec[2] ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'state', 'queued')
redis.call('HDEL', KEYS[1], 'worker', 'lease_until')
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[3])
add_history(KEYS[1], {ms = tonumber(ARGV[2]), event = 'released',
                     worker = ARGV[1]})
return 1
