-- A worker reports progress and renews its lease on a running operation.
-- Returns 1, 0 when the operation is no longer this worker's, or 2 when a delete halted it
-- (lib/halt.lua): the worker stops its step and records its end (finish.lua).
-- requires: fields (store/lua/lib/fields.lua: read_fields)
local key_op = KEYS[1]     -- the operation hash
local key_queue = KEYS[2]  -- the queue zset
local arg_worker_id = ARGV[1]     -- worker id
local arg_description = ARGV[2]   -- or ""
local arg_now = ARGV[3]           -- ms
local arg_lease = ARGV[4]         -- ms
local arg_operation_id = ARGV[5]  -- operation id
local op = read_fields(key_op, {'state', 'worker'})
if op.state == 'halting' and op.worker == arg_worker_id then return 2 end
if op.state ~= 'running' or op.worker ~= arg_worker_id then return 0 end
local until_ms = tonumber(arg_now) + tonumber(arg_lease)
redis.call('HSET', key_op, 'lease_until', until_ms)
if arg_description ~= '' then redis.call('HSET', key_op, 'description', arg_description) end
redis.call('ZADD', key_queue, until_ms, arg_operation_id)
return 1
