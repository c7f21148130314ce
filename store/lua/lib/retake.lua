-- Prepended by cmake/EmbedScripts.cmake to every script with a "-- requires: retake" line.
-- An operation that nobody runs any more is taken, by exactly one caller, to be sent again or
-- given up on: its lease ran out (recover.lua), its worker was seen to go (revoke.lua,
-- docs/decisions/0052), its claim never came, or a worker gave it back. Its queue entry moves
-- to the claim timeout in the same step, so no other scan takes it too; the caller sends it or
-- fails it at once.

-- Takes the operation op_id (op: its fields state, claims, job, worker, kind, tenant as read)
-- into out as recover.lua answers it: {op_id, "halted"|"abandon"|"resend", claims, job or "",
-- "lease"|"revoked"|"", kind or "", tenant or ""}. taken_as is the history event of a running
-- step taken from its worker ("lease_expired" or "revoked") and the answer's fifth element says
-- which; a halting creation ends failed (lib/halt.lua), one whose claims reached max_attempts
-- is given up on, and the others are resent only when can_resend. Returns whether it took it.
local function retake(prefix, queue, op_id, op, now, next_due, max_attempts, can_resend, taken_as,
                      out)
  local op_key = prefix .. 'op:' .. op_id
  local claims = tonumber(op.claims or '0')
  if op.state == 'halting' then
    -- Nobody runs it (any more): it ends now, failed, and its delete becomes due.
    redis.call('HDEL', op_key, 'worker', 'lease_until')
    redis.call('ZADD', queue, next_due, op_id)
    table.insert(out, {op_id, 'halted', claims, '', '', op.kind or '', op.tenant or ''})
  elseif claims >= max_attempts then
    -- Used up: its lease ran out, its worker went, or it was given back that many times.
    redis.call('ZADD', queue, next_due, op_id)
    table.insert(out, {op_id, 'abandon', claims, '', '', op.kind or '', op.tenant or ''})
  elseif can_resend then
    local running = op.state == 'running'
    -- Written before the worker goes: it may have to be written out as the first claim's
    -- (lib/history.lua).
    if running then
      add_history(op_key, {ms = now, event = taken_as, attempt = claims, worker = op.worker})
      -- Its late outcome will be refused: the worker is no longer the operation's.
      redis.call('HSET', op_key, 'state', 'queued')
      redis.call('HDEL', op_key, 'worker', 'lease_until')
    else
      add_history(op_key, {ms = now, event = 'resent', attempt = claims})
    end
    redis.call('HINCRBY', op_key, 'resends', 1)
    redis.call('ZADD', queue, next_due, op_id)
    table.insert(out, {op_id, 'resend', claims, op.job or '',
                       running and (taken_as == 'revoked' and 'revoked' or 'lease') or '',
                       op.kind or '', op.tenant or ''})
  else
    return false
  end
  return true
end
