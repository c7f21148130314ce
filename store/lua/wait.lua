-- A worker records that a step ended with the operation still in progress: it waits, held by
-- nobody, until its due time, when the recovery loop sends it to a worker for its next step (a
-- poll). Only the step's progress text, the state the next step resumes from and the count of
-- steps are kept: no history line per step, so a waiting operation stays small in Redis.
-- An operation of a tenant waits in its tenant's polls ("<prefix>polls:<tenant>", scored by due
-- time, the tenant listed in "<prefix>poll_tenants" at its earliest due time or before), so the
-- recovery scan takes every tenant's due steps in turn (docs/decisions/0038); its queue entry
-- stays, a minute later, for the gateways of the previous release, which read only the queue.
-- One without a tenant (begun by a gateway of the previous release) waits in the queue alone.
-- Returns 1, 0 when the operation is no longer this worker's, or 2 when a delete halted it
-- (lib/halt.lua): the worker then records its end with finish.lua.
-- requires: history (store/lua/lib/history.lua: add_history)
-- requires: fields (store/lua/lib/fields.lua: read_fields)
local key_op = KEYS[1]     -- the operation hash
local key_queue = KEYS[2]  -- the queue zset
local arg_worker_id = ARGV[1]     -- worker id
local arg_description = ARGV[2]   -- the step's progress text
local arg_resume = ARGV[3]        -- JSON text, or "" for none
local arg_due = ARGV[4]           -- epoch ms the next step is due at
local arg_now = ARGV[5]           -- ms
local arg_operation_id = ARGV[6]  -- operation id
local arg_prefix = ARGV[7]        -- the key prefix "<ns>:"
local op = read_fields(key_op, {'state', 'worker', 'tenant'})
if op.state == 'halting' and op.worker == arg_worker_id then return 2 end
if op.state ~= 'running' or op.worker ~= arg_worker_id then return 0 end
local steps = redis.call('HINCRBY', key_op, 'steps', 1)
-- Before the worker goes: it may have to be written out as the first claim's (lib/history.lua).
if steps == 1 then
  add_history(key_op, {ms = tonumber(arg_now), event = 'waiting', worker = arg_worker_id})
end
redis.call('HSET', key_op, 'state', 'waiting', 'description', arg_description, 'due_ms', arg_due)
if arg_resume ~= '' then
  redis.call('HSET', key_op, 'resume', arg_resume)
else
  redis.call('HDEL', key_op, 'resume')
end
redis.call('HDEL', key_op, 'worker', 'lease_until')
local due = tonumber(arg_due)
if op.tenant and op.tenant ~= '' then
  redis.call('ZADD', arg_prefix .. 'polls:' .. op.tenant, due, arg_operation_id)
  redis.call('ZADD', arg_prefix .. 'poll_tenants', 'LT', due, op.tenant)
  redis.call('ZADD', key_queue, due + 60000, arg_operation_id)
else
  redis.call('ZADD', key_queue, due, arg_operation_id)
end
return 1
