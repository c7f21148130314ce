-- An operator sends an unfinished operation again (osbq-ctl resend): a queued one, or a running
-- one whose lease ran out (its worker died or hangs without renewing), is queued again with its
-- claims restarted at 0 and due at once, so the next recovery pass of any gateway sends its job
-- to a worker. A waiting operation stays waiting, due at once: its next step runs now. A running
-- operation whose lease is live is refused: its worker is alive, and a second run would race it
-- (fail it instead).
-- Returns 1, 0 when the operation is finished or unknown, 2 when its worker's lease is live.
-- requires: history (store/lua/lib/history.lua: add_history)
-- requires: fields (store/lua/lib/fields.lua: read_fields)
-- requires: events (store/lua/lib/events.lua: event_add)
local key_op = KEYS[1]     -- the operation hash
local key_queue = KEYS[2]  -- the queue zset
local arg_now = ARGV[1]           -- ms
local arg_operation_id = ARGV[2]  -- operation id
local arg_prefix = ARGV[3]        -- the key prefix "<ns>:"
local arg_by = ARGV[4]            -- who resent it (osbq-ctl: the OS user)
local arg_events_max = ARGV[5]    -- the events the audit trail keeps (OSBQ_EVENTS_MAX), "0": none
local op = read_fields(key_op, {'state', 'worker', 'lease_until', 'tenant', 'kind', 'instance',
                                'binding', 'platform'})
if op.state ~= 'queued' and op.state ~= 'running' and op.state ~= 'waiting' then return 0 end
if op.state == 'running' and tonumber(op.lease_until or '0') >= tonumber(arg_now) then return 2 end
-- Before the worker goes: it may have to be written out as the first claim's (lib/history.lua).
add_history(key_op, {ms = tonumber(arg_now), event = 'resent_by_operator',
                     worker = op.worker})
if op.state == 'waiting' then
  redis.call('HSET', key_op, 'claims', 0, 'due_ms', arg_now)
  if op.tenant and op.tenant ~= '' then
    -- It waits in its tenant's polls (wait.lua): due there at once.
    redis.call('ZADD', arg_prefix .. 'polls:' .. op.tenant, 0, arg_operation_id)
    redis.call('ZADD', arg_prefix .. 'poll_tenants', 'LT', 0, op.tenant)
  end
else
  redis.call('HSET', key_op, 'state', 'queued', 'claims', 0)
end
redis.call('HDEL', key_op, 'worker', 'lease_until')
redis.call('ZADD', key_queue, 0, arg_operation_id)
event_add(arg_prefix, arg_events_max, 'operator', 'action', 'resend', 'kind', op.kind,
          'operation', arg_operation_id, 'instance', op.instance, 'binding', op.binding,
          'platform', op.platform or 'default', 'tenant', op.tenant, 'worker', op.worker,
          'by', arg_by)
return 1
