-- A worker claims an operation before running its next step: queued -> running, a waiting
-- operation that is due (a poll) -> running, or a running operation whose lease has expired is
-- taken over. The claim decides who runs a job delivered twice, and a step due while a previous
-- step still runs is refused by the live lease.
-- One read and one write of the operation (its history included), and its queue entry scored
-- by the lease.
-- Returns {1, resume JSON or "", started_ms, steps, created_ms, due_ms or 0, tenant or "",
-- after or ""} when claimed (due_ms: when the step of a waiting operation was due, so the worker
-- can tell how late it runs; tenant: whose operation it is, for the worker's exec places; after:
-- the creation a delete halted, lib/halt.lua, which its backend is told), 0 otherwise.
-- requires: history (store/lua/lib/history.lua: history_with)
-- requires: fields (store/lua/lib/fields.lua: read_fields)
-- requires: release (store/lua/lib/release.lua: begun_by_previous_release)
local key_op = KEYS[1]     -- the operation hash
local key_queue = KEYS[2]  -- the queue zset
local arg_worker_id = ARGV[1]     -- worker id
local arg_attempt = ARGV[2]       -- the attempt the job carries (informational)
local arg_now = ARGV[3]           -- ms
local arg_lease = ARGV[4]         -- ms
local arg_operation_id = ARGV[5]  -- operation id
local arg_prefix = ARGV[6]        -- the key prefix "<ns>:"
local op = read_fields(key_op, {'state', 'lease_until', 'due_ms', 'tenant', 'claims',
                                'started_ms', 'history', 'resume', 'steps', 'created_ms',
                                'worker', 'service_id', 'after'})
local previous_release = begun_by_previous_release(op.service_id)
local state = op.state
local now = tonumber(arg_now)
if state == 'running' then
  if tonumber(op.lease_until or '0') >= now then return 0 end
elseif state == 'waiting' then
  -- A copy of the job delivered before the step is due (a late duplicate): not a poll yet. The
  -- second of slack absorbs the clocks of the worker that set the due time and this one.
  if tonumber(op.due_ms or '0') > now + 1000 then return 0 end
  -- A delete waits for the creation it halted to stop (lib/halt.lua).
  if op.after and redis.call('HGET', arg_prefix .. 'op:' .. op.after, 'state') == 'halting' then
    return 0
  end
elseif state ~= 'queued' then
  return 0
end
local until_ms = now + tonumber(arg_lease)
local started = op.started_ms or now
local fields = {'state', 'running', 'worker', arg_worker_id, 'lease_until', until_ms}
local attempt
if state == 'waiting' then
  -- A poll is not an attempt: claims count the steps that never ended (crashes, give-backs).
  attempt = tonumber(op.claims or '1')
else
  -- Claims count the attempts: a job that keeps killing its workers is abandoned after the
  -- limit.
  attempt = tonumber(op.claims or '0') + 1
  table.insert(fields, 'claims')
  table.insert(fields, attempt)
  -- The first claim of this release's operation into an empty history is said by started_ms,
  -- worker and attempt (lib/history.lua); the previous release's operations keep every event
  -- written.
  if op.history or op.started_ms or previous_release then
    table.insert(fields, 'history')
    table.insert(fields, history_with(op.history, {ms = now, event = 'claimed',
                                                   worker = arg_worker_id, attempt = attempt},
                                      op))
  end
end
-- The attempt is claims' count (osbq-ctl shows it so); the previous release's operations keep
-- the field of their own.
if previous_release then
  table.insert(fields, 'attempt')
  table.insert(fields, attempt)
end
if not op.started_ms then
  table.insert(fields, 'started_ms')
  table.insert(fields, now)
end
redis.call('HSET', key_op, unpack(fields))
redis.call('ZADD', key_queue, until_ms, arg_operation_id)
-- A waiting operation of a tenant leaves its tenant's polls (wait.lua).
if state == 'waiting' and op.tenant and op.tenant ~= '' then
  redis.call('ZREM', arg_prefix .. 'polls:' .. op.tenant, arg_operation_id)
end
local due = state == 'waiting' and tonumber(op.due_ms or '0') or 0
return {1, op.resume or '', tonumber(started), tonumber(op.steps or '0'),
        tonumber(op.created_ms or '0'), due, op.tenant or '', op.after or ''}
