-- Finds operations whose claim never came, whose lease expired, or whose next step is due (they
-- wait: a poll), and hands each to exactly one caller: its due time moves forward in the same
-- step, so a concurrent scan skips it.
-- KEYS[1] queue: the queue zset
-- ARGV[1] now: ms
-- ARGV[2] limit: most operations to return
-- ARGV[3] max_attempts: the attempt limit (claims)
-- ARGV[4] claim_timeout: ms
-- ARGV[5] prefix: the key prefix "<ns>:"
-- ARGV[6] can_resend: "1" when the caller can resend (a worker has room), else "0": then only
--          operations to abandon are taken
-- Returns a list of {operation id, "resend"|"abandon"|"poll", claims so far, encoded job or "",
-- "lease" when a running operation's lease ran out else "", kind, tenant or ""}, followed by the earliest
-- score left in the queue (a string, ms) when it is not empty. Resends are written to the
-- operation's history; polls are not (one per step would grow every waiting operation), nor
-- counted as resends or attempts.
-- requires: history (store/lua/lib/history.lua: add_history)
local queue, now, limit = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[3])
local next_due = now + tonumber(ARGV[4])
local out = {}
local due = redis.call('ZRANGEBYSCORE', queue, '-inf', now, 'LIMIT', 0, tonumber(ARGV[2]))
for _, op_id in ipairs(due) do
  local op = ARGV[5] .. 'op:' .. op_id
  local rec = redis.call('HMGET', op, 'state', 'lease_until', 'claims', 'job', 'worker', 'kind',
                         'tenant')
  local state, claims = rec[1], tonumber(rec[3] or '0')
  if not state or state == 'succeeded' or state == 'failed' then
    redis.call('ZREM', queue, op_id)
  elseif state == 'running' and tonumber(rec[2] or '0') >= now then
    -- renewed since it was scored: score it by its lease again
    redis.call('ZADD', queue, rec[2], op_id)
  elseif state == 'waiting' then
    if ARGV[6] == '1' then
      redis.call('ZADD', queue, next_due, op_id)
      table.insert(out, {op_id, 'poll', claims, rec[4] or '', '', rec[6] or '', rec[7] or ''})
    end
  elseif claims >= limit then
    -- Used up: its lease ran out, or it was given back (deadline, shutdown), that many times.
    redis.call('ZADD', queue, next_due, op_id)
    table.insert(out, {op_id, 'abandon', claims, '', '', rec[6] or '', rec[7] or ''})
  elseif ARGV[6] == '1' then
    local event = {ms = now, event = 'resent', attempt = claims}
    if state == 'running' then
      -- The lease ran out: the worker died or hangs. Its late outcome will be refused.
      redis.call('HSET', op, 'state', 'queued')
      redis.call('HDEL', op, 'worker', 'lease_until')
      event.event, event.worker = 'lease_expired', rec[5]
    end
    add_history(op, event)
    redis.call('HINCRBY', op, 'resends', 1)
    redis.call('ZADD', queue, next_due, op_id)
    table.insert(out, {op_id, 'resend', claims, rec[4] or '', state == 'running' and 'lease' or '',
                       rec[6] or '', rec[7] or ''})
  end
end
-- When the next scan has work: the caller sleeps until then rather than a whole interval.
local first = redis.call('ZRANGEBYSCORE', queue, '-inf', '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
if first[2] then table.insert(out, first[2]) end
return out
