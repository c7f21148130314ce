-- A worker gives an operation back without an outcome (it is stopping, or the operation passed
-- its deadline): queued again and due at once, so the recovery loop resends it to another worker.
-- The state a previous step saved (resume) stays: the next claim runs the step again from it.
-- Returns 1, or 0 when the operation is not this worker's.
-- requires: history (store/lua/lib/history.lua: add_history)
-- requires: fields (store/lua/lib/fields.lua: read_fields)
local KEY = {
  op = KEYS[1],     -- the operation hash
  queue = KEYS[2],  -- the queue zset
}
local ARG = {
  worker_id = ARGV[1],     -- worker id
  now = ARGV[2],           -- ms
  operation_id = ARGV[3],  -- operation id
}
local op = read_fields(KEY.op, {'state', 'worker'})
if op.state ~= 'running' or op.worker ~= ARG.worker_id then return 0 end
-- Before the worker goes: it may have to be written out as the first claim's (lib/history.lua).
add_history(KEY.op, {ms = tonumber(ARG.now), event = 'released',
                     worker = ARG.worker_id})
redis.call('HSET', KEY.op, 'state', 'queued')
redis.call('HDEL', KEY.op, 'worker', 'lease_until')
redis.call('ZADD', KEY.queue, ARG.now, ARG.operation_id)
return 1
