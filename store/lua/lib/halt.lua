-- Prepended by cmake/EmbedScripts.cmake to every script with a "-- requires: halt" line; uses
-- read_fields (lib/fields.lua), which a script requires after it so that it comes first.
-- A delete accepted while the creation that holds its record runs (docs/decisions/0051): the
-- creation (a provision, a bind) is marked halting, naming the delete (halted_by). It fails
-- once its step stopped: its worker, told at its next lease renewal (progress.lua answers 2),
-- cancels the backend and records the end (finish.lua); a step nobody runs (queued, or waiting
-- for its next poll) is never run again and the recovery loop's next scan fails it at once
-- (lease_until now); a worker that dies meanwhile lets its lease run out, and the scan fails it
-- then. finish.lua then makes the delete due. Returns the worker that runs its step (or false)
-- and when the delete is due at the latest (the step's lease end; else fallback_due).
local function halt(prefix, queue, running, by, now, fallback_due)
  local key = prefix .. 'op:' .. running
  local op = read_fields(key, {'state', 'worker', 'lease_until', 'tenant'})
  local stepping = op.state == 'running' and tonumber(op.lease_until or '0') >= tonumber(now)
  if stepping then
    redis.call('HSET', key, 'state', 'halting', 'halted_by', by)
    return op.worker, op.lease_until
  end
  redis.call('HSET', key, 'state', 'halting', 'halted_by', by, 'lease_until', now)
  redis.call('HDEL', key, 'worker')
  if op.tenant and op.tenant ~= '' then
    redis.call('ZREM', prefix .. 'polls:' .. op.tenant, running)
  end
  redis.call('ZADD', queue, now, running)
  return false, fallback_due
end

-- Queues a delete waiting after the creation it halted, due at due (the begin script's first
-- guess; now, once finish.lua ended the creation): in its tenant's polls, as a step due later
-- waits (wait.lua), or in the queue alone without a tenant.
local function queue_after_halt(prefix, queue, op_id, tenant, due)
  if tenant ~= '' then
    redis.call('ZADD', prefix .. 'polls:' .. tenant, due, op_id)
    redis.call('ZADD', prefix .. 'poll_tenants', 'LT', due, tenant)
    redis.call('ZADD', queue, due + 60000, op_id)
  else
    redis.call('ZADD', queue, due, op_id)
  end
end
