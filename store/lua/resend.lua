-- An operator sends an unfinished operation again (osbq-ctl resend): a queued one, or a running
-- one whose lease ran out (its worker died or hangs without renewing), is queued again with its
-- claims restarted at 0 and due at once, so the next recovery pass of any gateway sends its job
-- to a worker. A waiting operation stays waiting, due at once: its next step runs now. A running
-- operation whose lease is live is refused: its worker is alive, and a second run would race it
-- (fail it instead).
-- KEYS[1] op: the operation hash
-- KEYS[2] queue: the queue zset
-- ARGV[1] now: ms
-- ARGV[2] operation_id: operation id
-- ARGV[3] prefix: the key prefix "<ns>:"
-- Returns 1, 0 when the operation is finished or unknown, 2 when its worker's lease is live.
-- requires: history (store/lua/lib/history.lua: add_history)
local rec = redis.call('HMGET', KEYS[1], 'state', 'worker', 'lease_until', 'tenant')
if rec[1] ~= 'queued' and rec[1] ~= 'running' and rec[1] ~= 'waiting' then return 0 end
if rec[1] == 'running' and tonumber(rec[3] or '0') >= tonumber(ARGV[1]) then return 2 end
if rec[1] == 'waiting' then
  redis.call('HSET', KEYS[1], 'claims', 0, 'due_ms', ARGV[1])
  if rec[4] and rec[4] ~= '' then
    -- It waits in its tenant's polls (wait.lua): due there at once.
    redis.call('ZADD', ARGV[3] .. 'polls:' .. rec[4], 0, ARGV[2])
    redis.call('ZADD', ARGV[3] .. 'poll_tenants', 'LT', 0, rec[4])
  end
else
  redis.call('HSET', KEYS[1], 'state', 'queued', 'claims', 0)
end
redis.call('HDEL', KEYS[1], 'worker', 'lease_until')
redis.call('ZADD', KEYS[2], 0, ARGV[2])
add_history(KEYS[1], {ms = tonumber(ARGV[1]), event = 'resent_by_operator',
                     worker = rec[2]})
return 1
