-- A worker gives an operation back without an outcome (it is stopping, or the operation passed
-- its deadline): queued again and due at once, so the recovery loop resends it to another worker.
-- The state a previous step saved (resume) stays: the next claim runs the step again from it.
-- Returns 1, or 0 when the operation is not this worker's.
-- requires: history (store/lua/lib/history.lua: add_history)
-- requires: fields (store/lua/lib/fields.lua: read_fields)
local key_op = KEYS[1]     -- the operation hash
local key_queue = KEYS[2]  -- the queue zset
local arg_worker_id = ARGV[1]     -- worker id
local arg_now = ARGV[2]           -- ms
local arg_operation_id = ARGV[3]  -- operation id
local op = read_fields(key_op, {'state', 'worker'})
if op.state ~= 'running' or op.worker ~= arg_worker_id then return 0 end
-- Before the worker goes: it may have to be written out as the first claim's (lib/history.lua).
add_history(key_op, {ms = tonumber(arg_now), event = 'released',
                     worker = arg_worker_id})
redis.call('HSET', key_op, 'state', 'queued')
redis.call('HDEL', key_op, 'worker', 'lease_until')
redis.call('ZADD', key_queue, arg_now, arg_operation_id)
return 1
