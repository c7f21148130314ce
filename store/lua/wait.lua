-- A worker records that a step ended with the operation still in progress: it waits, held by
-- nobody, until its due time, when the recovery loop sends it to a worker for its next step (a
-- poll). Only the step's progress text, the state the next step resumes from and the count of
-- steps are kept: no history line per step, so a waiting operation stays small in Redis.
-- KEYS[1] op: the operation hash
-- KEYS[2] queue: the queue zset
-- ARGV[1] worker_id: worker id
-- ARGV[2] description: the step's progress text
-- ARGV[3] resume: JSON text, or "" for none
-- ARGV[4] due: epoch ms the next step is due at
-- ARGV[5] now: ms
-- ARGV[6] operation_id: operation id
-- Returns 1, or 0 when the operation is no longer this worker's.
-- requires: history (store/lua/lib/history.lua: add_history)
local rec = redis.call('HMGET', KEYS[1], 'state', 'worker')
if rec[1] ~= 'running' or rec[2] ~= ARGV[1] then return 0 end
local steps = redis.call('HINCRBY', KEYS[1], 'steps', 1)
redis.call('HSET', KEYS[1], 'state', 'waiting', 'description', ARGV[2], 'due_ms', ARGV[4])
if ARGV[3] ~= '' then
  redis.call('HSET', KEYS[1], 'resume', ARGV[3])
else
  redis.call('HDEL', KEYS[1], 'resume')
end
redis.call('HDEL', KEYS[1], 'worker', 'lease_until')
redis.call('ZADD', KEYS[2], ARGV[4], ARGV[6])
if steps == 1 then
  add_history(KEYS[1], {ms = tonumber(ARGV[5]), event = 'waiting', worker = ARGV[1]})
end
return 1
