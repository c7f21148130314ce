-- A gateway saw a worker go (its bus connection ended, its READYs stopped, or a send to it
-- failed): the operations that gateway sent it are taken from it at once rather than when their
-- leases or claim timeouts run out (docs/decisions/0052). Only what is still that worker's, or
-- still waits for the claim of a job sent to it, is taken: a step it ended, or one that another
-- worker runs now, is left alone; a worker that was only cut off finds its lease gone at its next
-- renewal and stops, as after a lease expiry.
-- Returns the list recover.lua returns (without its trailing due time): "halted", "abandon",
-- "resend" (fifth element "revoked" for a running step taken from the worker) and "poll" items.
-- requires: retake (store/lua/lib/retake.lua: retake)
-- requires: history (store/lua/lib/history.lua: add_history)
-- requires: fields (store/lua/lib/fields.lua: read_fields)
local key_queue = KEYS[1]  -- the queue zset
local arg_worker_id = ARGV[1]      -- the worker that went
local arg_operation_ids = ARGV[2]  -- the operations sent to it, separated by spaces
local arg_now = ARGV[3]            -- ms
local arg_max_attempts = ARGV[4]   -- the attempt limit (claims)
local arg_claim_timeout = ARGV[5]  -- ms
local arg_prefix = ARGV[6]         -- the key prefix "<ns>:"
local queue, prefix, now = key_queue, arg_prefix, tonumber(arg_now)
local next_due = now + tonumber(arg_claim_timeout)
local fields = {'state', 'claims', 'job', 'worker', 'kind', 'tenant', 'due_ms'}
local out = {}
for op_id in string.gmatch(arg_operation_ids, '[^ ]+') do
  local op = read_fields(prefix .. 'op:' .. op_id, fields)
  local state = op.state
  if (state == 'running' or state == 'halting') and op.worker == arg_worker_id then
    retake(prefix, queue, op_id, op, now, next_due, tonumber(arg_max_attempts), true, 'revoked',
           out)
  elseif state == 'queued' and tonumber(redis.call('ZSCORE', queue, op_id) or '0') > now then
    -- Sent and not claimed (a job given back is due already: the recovery loop sends it).
    retake(prefix, queue, op_id, op, now, next_due, tonumber(arg_max_attempts), true, 'revoked',
           out)
  elseif state == 'waiting' and tonumber(op.due_ms or '0') <= now then
    -- Its next step was sent and not claimed. (A step that just ended waiting is due later: it
    -- is left to its due time.)
    local polls = op.tenant and op.tenant ~= '' and prefix .. 'polls:' .. op.tenant or queue
    redis.call('ZADD', polls, next_due, op_id)
    table.insert(out, {op_id, 'poll', tonumber(op.claims or '0'), op.job or '', '', op.kind or '',
                       op.tenant or ''})
  end
end
return out
