-- Finds operations whose claim never came, whose lease expired, or whose next step is due (they
-- wait: a poll), and hands each to exactly one caller: its due time moves forward in the same
-- step, so a concurrent scan skips it.
-- Due steps are taken tenant by tenant (docs/decisions/0038): the tenants with steps due are
-- listed in "<prefix>poll_tenants" by their earliest due time, each tenant's waiting operations
-- in "<prefix>polls:<tenant>" (wait.lua). Every tenant due gets an equal share of the batch,
-- what a tenant leaves unused goes to the others in further rounds, so a tenant with 100,000
-- steps due takes its share and another tenant's one step leaves in the same batch.
-- Returns a list of {operation id, "resend"|"abandon"|"poll", claims so far, encoded job or "",
-- "lease" when a running operation's lease ran out else "", kind, tenant or ""}, followed by the
-- earliest due time left (a string, ms) when anything is left. Resends are written to the
-- operation's history; polls are not (one per step would grow every waiting operation), nor
-- counted as resends or attempts.
-- requires: retake (store/lua/lib/retake.lua: retake)
-- requires: history (store/lua/lib/history.lua: add_history)
-- requires: fields (store/lua/lib/fields.lua: read_fields)
local key_queue = KEYS[1]  -- the queue zset
local arg_now = ARGV[1]            -- ms
local arg_limit = ARGV[2]          -- most operations to return
local arg_max_attempts = ARGV[3]   -- the attempt limit (claims)
local arg_claim_timeout = ARGV[4]  -- ms
local arg_prefix = ARGV[5]         -- the key prefix "<ns>:"
local arg_can_resend = ARGV[6]     -- "1" when the caller can resend (a worker has room), else "0":
                                   -- then only operations to abandon are taken
local queue, now, max_attempts = key_queue, tonumber(arg_now), tonumber(arg_max_attempts)
local budget, prefix = tonumber(arg_limit), arg_prefix
local can_resend = arg_can_resend == '1'
local next_due = now + tonumber(arg_claim_timeout)
local poll_tenants = prefix .. 'poll_tenants'
-- The fields each scan reads of an operation: listed once for the whole batch.
local due_fields = {'state', 'lease_until', 'claims', 'job', 'worker', 'kind', 'tenant'}
local poll_fields = {'state', 'claims', 'job', 'kind'}
local out = {}
local due = redis.call('ZRANGEBYSCORE', queue, '-inf', now, 'LIMIT', 0, budget)
for _, op_id in ipairs(due) do
  local op_key = prefix .. 'op:' .. op_id
  local op = read_fields(op_key, due_fields)
  local state, claims = op.state, tonumber(op.claims or '0')
  if not state or state == 'succeeded' or state == 'failed' then
    redis.call('ZREM', queue, op_id)
  elseif state == 'running' and tonumber(op.lease_until or '0') >= now then
    -- renewed since it was scored: score it by its lease again
    redis.call('ZADD', queue, op.lease_until, op_id)
  elseif state == 'waiting' and op.tenant and op.tenant ~= '' then
    -- Its tenant's polls send its step (below); the queue entry only waits for old gateways.
    -- Put back an entry missing there (a record written before polls were per tenant).
    if not redis.call('ZSCORE', prefix .. 'polls:' .. op.tenant, op_id) then
      redis.call('ZADD', prefix .. 'polls:' .. op.tenant, now, op_id)
      redis.call('ZADD', poll_tenants, 'LT', now, op.tenant)
    end
    redis.call('ZADD', queue, next_due + 60000, op_id)
  elseif state == 'waiting' then
    if can_resend then
      redis.call('ZADD', queue, next_due, op_id)
      table.insert(out, {op_id, 'poll', claims, op.job or '', '', op.kind or '', ''})
    end
  elseif state == 'halting' and op.worker and tonumber(op.lease_until or '0') >= now then
    -- Halted by a delete while its step runs (lib/halt.lua): its worker records the end.
    redis.call('ZADD', queue, op.lease_until, op_id)
  else
    -- Nobody runs it: its lease ran out, its claim never came, or it was given back.
    retake(prefix, queue, op_id, op, now, next_due, max_attempts, can_resend, 'lease_expired', out)
  end
end
budget = budget - #out

-- Takes at most share of tenant's due steps; returns how many it took (entries of operations no
-- longer waiting are dropped, not counted).
local function take_polls(tenant, share)
  local polls = prefix .. 'polls:' .. tenant
  local taken = 0
  for _, op_id in ipairs(redis.call('ZRANGEBYSCORE', polls, '-inf', now, 'LIMIT', 0, share)) do
    local op = read_fields(prefix .. 'op:' .. op_id, poll_fields)
    if op.state == 'waiting' then
      redis.call('ZADD', polls, next_due, op_id)
      table.insert(out, {op_id, 'poll', tonumber(op.claims or '0'), op.job or '', '', op.kind or '',
                         tenant})
      taken = taken + 1
    else
      redis.call('ZREM', polls, op_id)
    end
  end
  return taken
end

if can_resend and budget > 0 then
  local tenants = redis.call('ZRANGEBYSCORE', poll_tenants, '-inf', now, 'LIMIT', 0, budget)
  local active = tenants
  while budget > 0 and #active > 0 do
    local share = math.max(1, math.floor(budget / #active))
    local more = {}
    for _, tenant in ipairs(active) do
      if budget <= 0 then break end
      local taken = take_polls(tenant, math.min(share, budget))
      budget = budget - taken
      -- Took its whole share: it may have more due for the next round.
      if taken == share then table.insert(more, tenant) end
    end
    active = more
  end
  -- Each tenant visited is listed again at its earliest due time, or no longer.
  for _, tenant in ipairs(tenants) do
    local first = redis.call('ZRANGE', prefix .. 'polls:' .. tenant, 0, 0, 'WITHSCORES')
    if first[2] then
      redis.call('ZADD', poll_tenants, first[2], tenant)
    else
      redis.call('ZREM', poll_tenants, tenant)
    end
  end
end

-- When the next scan has work: the caller sleeps until then rather than a whole interval.
local first = redis.call('ZRANGEBYSCORE', queue, '-inf', '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
local first_poll = redis.call('ZRANGE', poll_tenants, 0, 0, 'WITHSCORES')
local earliest = first[2] and tonumber(first[2])
if first_poll[2] and (not earliest or tonumber(first_poll[2]) < earliest) then
  earliest = tonumber(first_poll[2])
end
if earliest then table.insert(out, string.format('%d', earliest)) end
return out
