-- Prepended by cmake/EmbedScripts.cmake to every script with a "-- requires: begin_record" line;
-- uses in_progress_take (lib/in_progress.lua), queue_after_halt (lib/halt.lua) and
-- handover_claim (lib/handover.lua), which a script requires after it so that they come first.
-- The end begin_instance.lua and begin_binding.lua share once they accept an operation: the
-- operation's fields that say how it runs, its hash, its queue entry, and the record it holds
-- (an instance's or a binding's) locked by it.

-- b: op_key, op_id, queue, fields (the operation's so far) and add (appends to them), tenant,
-- platform, gateway (the waiting one, or ''), cap (the tenant's in-progress cap applies),
-- claim_deadline, handed (a hand-over) with handed_worker and handed_until, now, after and
-- after_due (a delete waiting for the creation it halted), record_key and record_fields (what
-- the record gets besides its lock).
local function begin_record(prefix, b)
  local add = b.add
  if b.platform ~= 'default' then add('platform', b.platform) end
  if b.gateway ~= '' then add('waited', b.gateway) end
  if b.cap then add('in_progress_key', in_progress_take(prefix, b.tenant)) end
  local due = b.claim_deadline
  if b.handed then due = handover_claim(add, b.handed_worker, b.handed_until, b.now) end
  if b.after then
    add('after', b.after)
    add('due_ms', b.after_due)
  end
  redis.call('HSET', b.op_key, unpack(b.fields))
  if b.after then
    queue_after_halt(prefix, b.queue, b.op_id, b.tenant, b.after_due)
  else
    redis.call('ZADD', b.queue, due, b.op_id)
  end
  local f = b.record_fields
  local n = #f
  f[n + 1], f[n + 2], f[n + 3], f[n + 4] = 'lock_x', b.op_id, 'last_op', b.op_id
  redis.call('HSET', b.record_key, unpack(f))
end
