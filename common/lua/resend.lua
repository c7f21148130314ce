-- An operator sends an unfinished operation again (osbq-ctl resend): a running one is taken from
-- its worker, whose late outcome and progress will then be refused; its claims restart at 0, and
-- it is due at once, so the next recovery pass of any gateway sends its job to a worker.
-- KEYS: 1 operation hash, 2 queue zset, 3 the operation's history list
-- ARGV: 1 now (ms), 2 operation id
-- Returns 1, or 0 when the operation is finished or unknown.
local rec = redis.call('HMGET', KEYS[1], 'state', 'worker')
if rec[1] ~= 'queued' and rec[1] ~= 'running' then return 0 end
redis.call('HSET', KEYS[1], 'state', 'queued', 'claims', 0)
redis.call('HDEL', KEYS[1], 'worker', 'lease_until')
redis.call('ZADD', KEYS[2], 0, ARGV[2])
redis.call('RPUSH', KEYS[3], cjson.encode({ms = tonumber(ARGV[1]), event = 'resent_by_operator',
                                           worker = rec[2]}))
redis.call('LTRIM', KEYS[3], -64, -1)
return 1
