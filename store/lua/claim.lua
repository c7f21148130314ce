-- A worker claims an operation before running it: queued -> running, or a running operation
-- whose lease has expired is taken over. The claim decides who runs a job delivered twice.
-- KEYS[1] op: the operation hash
-- KEYS[2] queue: the queue zset
-- ARGV[1] worker_id: worker id
-- ARGV[2] attempt: the attempt the job carries (informational)
-- ARGV[3] now: ms
-- ARGV[4] lease: ms
-- ARGV[5] operation_id: operation id
-- Returns 1 when claimed, 0 otherwise.
-- requires: history (store/lua/lib/history.lua: add_history)
local state = redis.call('HGET', KEYS[1], 'state')
local now = tonumber(ARGV[3])
if state == 'running' then
  local lease = tonumber(redis.call('HGET', KEYS[1], 'lease_until') or '0')
  if lease >= now then return 0 end
elseif state ~= 'queued' then
  return 0
end
local until_ms = now + tonumber(ARGV[4])
-- Claims count the attempts: a job that keeps killing its workers is abandoned after the limit.
local claims = redis.call('HINCRBY', KEYS[1], 'claims', 1)
redis.call('HSET', KEYS[1], 'state', 'running', 'worker', ARGV[1], 'attempt', claims,
           'lease_until', until_ms)
redis.call('HSETNX', KEYS[1], 'started_ms', now)
redis.call('ZADD', KEYS[2], until_ms, ARGV[5])
add_history(KEYS[1], {ms = now, event = 'claimed', worker = ARGV[1],
                     attempt = claims})
return 1
