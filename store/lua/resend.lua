-- An operator sends an unfinished operation again (osbq-ctl resend): a queued one, or a running
-- one whose lease ran out (its worker died or hangs without renewing), is queued again with its
-- claims restarted at 0 and due at once, so the next recovery pass of any gateway sends its job
-- to a worker. A waiting operation stays waiting, due at once: its next step runs now. A running
-- operation whose lease is live is refused: its worker is alive, and a second run would race it
-- (fail it instead).
-- Returns 1, 0 when the operation is finished or unknown, 2 when its worker's lease is live.
-- requires: history (store/lua/lib/history.lua: add_history)
-- requires: fields (store/lua/lib/fields.lua: read_fields)
local KEY = {
  op = KEYS[1],     -- the operation hash
  queue = KEYS[2],  -- the queue zset
}
local ARG = {
  now = ARGV[1],           -- ms
  operation_id = ARGV[2],  -- operation id
  prefix = ARGV[3],        -- the key prefix "<ns>:"
}
local op = read_fields(KEY.op, {'state', 'worker', 'lease_until', 'tenant'})
if op.state ~= 'queued' and op.state ~= 'running' and op.state ~= 'waiting' then return 0 end
if op.state == 'running' and tonumber(op.lease_until or '0') >= tonumber(ARG.now) then return 2 end
-- Before the worker goes: it may have to be written out as the first claim's (lib/history.lua).
add_history(KEY.op, {ms = tonumber(ARG.now), event = 'resent_by_operator',
                     worker = op.worker})
if op.state == 'waiting' then
  redis.call('HSET', KEY.op, 'claims', 0, 'due_ms', ARG.now)
  if op.tenant and op.tenant ~= '' then
    -- It waits in its tenant's polls (wait.lua): due there at once.
    redis.call('ZADD', ARG.prefix .. 'polls:' .. op.tenant, 0, ARG.operation_id)
    redis.call('ZADD', ARG.prefix .. 'poll_tenants', 'LT', 0, op.tenant)
  end
else
  redis.call('HSET', KEY.op, 'state', 'queued', 'claims', 0)
end
redis.call('HDEL', KEY.op, 'worker', 'lease_until')
redis.call('ZADD', KEY.queue, 0, ARG.operation_id)
return 1
