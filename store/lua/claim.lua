-- A worker claims an operation before running its next step: queued -> running, a waiting
-- operation that is due (a poll) -> running, or a running operation whose lease has expired is
-- taken over. The claim decides who runs a job delivered twice, and a step due while a previous
-- step still runs is refused by the live lease.
-- One read and one write of the operation (its history included), and its queue entry scored
-- by the lease.
-- KEYS[1] op: the operation hash
-- KEYS[2] queue: the queue zset
-- ARGV[1] worker_id: worker id
-- ARGV[2] attempt: the attempt the job carries (informational)
-- ARGV[3] now: ms
-- ARGV[4] lease: ms
-- ARGV[5] operation_id: operation id
-- ARGV[6] prefix: the key prefix "<ns>:"
-- Returns {1, resume JSON or "", started_ms, steps, created_ms, due_ms or 0, tenant or ""} when
-- claimed (due_ms: when the step of a waiting operation was due, so the worker can tell how
-- late it runs; tenant: whose operation it is, for the worker's exec places), 0 otherwise.
-- requires: history (store/lua/lib/history.lua: add_history)
local rec = redis.call('HMGET', KEYS[1], 'state', 'lease_until', 'due_ms', 'tenant', 'claims',
                       'started_ms', 'history', 'resume', 'steps', 'created_ms')
local state = rec[1]
local now = tonumber(ARGV[3])
if state == 'running' then
  if tonumber(rec[2] or '0') >= now then return 0 end
elseif state == 'waiting' then
  -- A copy of the job delivered before the step is due (a late duplicate): not a poll yet. The
  -- second of slack absorbs the clocks of the worker that set the due time and this one.
  if tonumber(rec[3] or '0') > now + 1000 then return 0 end
elseif state ~= 'queued' then
  return 0
end
local until_ms = now + tonumber(ARGV[4])
local started = rec[6] or now
local fields = {'state', 'running', 'worker', ARGV[1], 'lease_until', until_ms}
local attempt
if state == 'waiting' then
  -- A poll is not an attempt: claims count the steps that never ended (crashes, give-backs).
  attempt = tonumber(rec[5] or '1')
else
  -- Claims count the attempts: a job that keeps killing its workers is abandoned after the
  -- limit.
  attempt = tonumber(rec[5] or '0') + 1
  table.insert(fields, 'claims')
  table.insert(fields, attempt)
  table.insert(fields, 'history')
  table.insert(fields, history_with(rec[7], {ms = now, event = 'claimed', worker = ARGV[1],
                                             attempt = attempt}))
end
table.insert(fields, 'attempt')
table.insert(fields, attempt)
if not rec[6] then
  table.insert(fields, 'started_ms')
  table.insert(fields, now)
end
redis.call('HSET', KEYS[1], unpack(fields))
redis.call('ZADD', KEYS[2], until_ms, ARGV[5])
-- A waiting operation of a tenant leaves its tenant's polls (wait.lua).
if state == 'waiting' and rec[4] and rec[4] ~= '' then
  redis.call('ZREM', ARGV[6] .. 'polls:' .. rec[4], ARGV[5])
end
local due = state == 'waiting' and tonumber(rec[3] or '0') or 0
return {1, rec[8] or '', tonumber(started), tonumber(rec[9] or '0'), tonumber(rec[10] or '0'),
        due, rec[4] or ''}
