-- A worker gives an operation back without an outcome (it is stopping, or the operation passed
-- its deadline): queued again and due at once, so the recovery loop resends it to another worker.
-- KEYS: 1 operation hash, 2 queue zset, 3 the operation's history list
-- ARGV: 1 worker id, 2 now (ms), 3 operation id
-- Returns 1, or 0 when the operation is not this worker's.
local rec = redis.call('HMGET', KEYS[1], 'state', 'worker')
if rec[1] ~= 'running' or rec[2] ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'state', 'queued')
redis.call('HDEL', KEYS[1], 'worker', 'lease_until')
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[3])
redis.call('RPUSH', KEYS[3], cjson.encode({ms = tonumber(ARGV[2]), event = 'released',
                                           worker = ARGV[1]}))
redis.call('LTRIM', KEYS[3], -64, -1)
return 1
