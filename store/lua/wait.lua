-- A worker records that a step ended with the operation still in progress: it waits, held by
-- nobody, until its due time, when the recovery loop sends it to a worker for its next step (a
-- poll). Only the step's progress text, the state the next step resumes from and the count of
-- steps are kept: no history line per step, so a waiting operation stays small in Redis.
-- An operation of a tenant waits in its tenant's polls ("<prefix>polls:<tenant>", scored by due
-- time, the tenant listed in "<prefix>poll_tenants" at its earliest due time or before), so the
-- recovery scan takes every tenant's due steps in turn (docs/decisions/0038); its queue entry
-- stays, a minute later, for the gateways of the previous release, which read only the queue.
-- One without a tenant (begun by a gateway of the previous release) waits in the queue alone.
-- KEYS[1] op: the operation hash
-- KEYS[2] queue: the queue zset
-- ARGV[1] worker_id: worker id
-- ARGV[2] description: the step's progress text
-- ARGV[3] resume: JSON text, or "" for none
-- ARGV[4] due: epoch ms the next step is due at
-- ARGV[5] now: ms
-- ARGV[6] operation_id: operation id
-- ARGV[7] prefix: the key prefix "<ns>:"
-- Returns 1, or 0 when the operation is no longer this worker's.
-- requires: history (store/lua/lib/history.lua: add_history)
local rec = redis.call('HMGET', KEYS[1], 'state', 'worker', 'tenant')
if rec[1] ~= 'running' or rec[2] ~= ARGV[1] then return 0 end
local steps = redis.call('HINCRBY', KEYS[1], 'steps', 1)
redis.call('HSET', KEYS[1], 'state', 'waiting', 'description', ARGV[2], 'due_ms', ARGV[4])
if ARGV[3] ~= '' then
  redis.call('HSET', KEYS[1], 'resume', ARGV[3])
else
  redis.call('HDEL', KEYS[1], 'resume')
end
redis.call('HDEL', KEYS[1], 'worker', 'lease_until')
local due = tonumber(ARGV[4])
if rec[3] and rec[3] ~= '' then
  redis.call('ZADD', ARGV[7] .. 'polls:' .. rec[3], due, ARGV[6])
  redis.call('ZADD', ARGV[7] .. 'poll_tenants', 'LT', due, rec[3])
  redis.call('ZADD', KEYS[2], due + 60000, ARGV[6])
else
  redis.call('ZADD', KEYS[2], due, ARGV[6])
end
if steps == 1 then
  add_history(KEYS[1], {ms = tonumber(ARGV[5]), event = 'waiting', worker = ARGV[1]})
end
return 1
