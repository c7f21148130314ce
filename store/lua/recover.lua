-- Finds operations whose claim never came, whose lease expired, or whose next step is due (they
-- wait: a poll), and hands each to exactly one caller: its due time moves forward in the same
-- step, so a concurrent scan skips it.
-- Due steps are taken tenant by tenant (docs/decisions/0038): the tenants with steps due are
-- listed in "<prefix>poll_tenants" by their earliest due time, each tenant's waiting operations
-- in "<prefix>polls:<tenant>" (wait.lua). Every tenant due gets an equal share of the batch,
-- what a tenant leaves unused goes to the others in further rounds, so a tenant with 100,000
-- steps due takes its share and another tenant's one step leaves in the same batch.
-- KEYS[1] queue: the queue zset
-- ARGV[1] now: ms
-- ARGV[2] limit: most operations to return
-- ARGV[3] max_attempts: the attempt limit (claims)
-- ARGV[4] claim_timeout: ms
-- ARGV[5] prefix: the key prefix "<ns>:"
-- ARGV[6] can_resend: "1" when the caller can resend (a worker has room), else "0": then only
--          operations to abandon are taken
-- Returns a list of {operation id, "resend"|"abandon"|"poll", claims so far, encoded job or "",
-- "lease" when a running operation's lease ran out else "", kind, tenant or ""}, followed by the
-- earliest due time left (a string, ms) when anything is left. Resends are written to the
-- operation's history; polls are not (one per step would grow every waiting operation), nor
-- counted as resends or attempts.
-- requires: history (store/lua/lib/history.lua: add_history)
local queue, now, limit = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[3])
local budget, prefix = tonumber(ARGV[2]), ARGV[5]
local next_due = now + tonumber(ARGV[4])
local poll_tenants = prefix .. 'poll_tenants'
local out = {}
local due = redis.call('ZRANGEBYSCORE', queue, '-inf', now, 'LIMIT', 0, budget)
for _, op_id in ipairs(due) do
  local op = prefix .. 'op:' .. op_id
  local rec = redis.call('HMGET', op, 'state', 'lease_until', 'claims', 'job', 'worker', 'kind',
                         'tenant')
  local state, claims = rec[1], tonumber(rec[3] or '0')
  if not state or state == 'succeeded' or state == 'failed' then
    redis.call('ZREM', queue, op_id)
  elseif state == 'running' and tonumber(rec[2] or '0') >= now then
    -- renewed since it was scored: score it by its lease again
    redis.call('ZADD', queue, rec[2], op_id)
  elseif state == 'waiting' and rec[7] and rec[7] ~= '' then
    -- Its tenant's polls send its step (below); the queue entry only waits for old gateways.
    -- Put back an entry missing there (a record written before polls were per tenant).
    if not redis.call('ZSCORE', prefix .. 'polls:' .. rec[7], op_id) then
      redis.call('ZADD', prefix .. 'polls:' .. rec[7], now, op_id)
      redis.call('ZADD', poll_tenants, 'LT', now, rec[7])
    end
    redis.call('ZADD', queue, next_due + 60000, op_id)
  elseif state == 'waiting' then
    if ARGV[6] == '1' then
      redis.call('ZADD', queue, next_due, op_id)
      table.insert(out, {op_id, 'poll', claims, rec[4] or '', '', rec[6] or '', ''})
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
budget = budget - #out

-- Takes at most share of tenant's due steps; returns how many it took (entries of operations no
-- longer waiting are dropped, not counted).
local function take_polls(tenant, share)
  local polls = prefix .. 'polls:' .. tenant
  local taken = 0
  for _, op_id in ipairs(redis.call('ZRANGEBYSCORE', polls, '-inf', now, 'LIMIT', 0, share)) do
    local rec = redis.call('HMGET', prefix .. 'op:' .. op_id, 'state', 'claims', 'job', 'kind')
    if rec[1] == 'waiting' then
      redis.call('ZADD', polls, next_due, op_id)
      table.insert(out, {op_id, 'poll', tonumber(rec[2] or '0'), rec[3] or '', '', rec[4] or '',
                         tenant})
      taken = taken + 1
    else
      redis.call('ZREM', polls, op_id)
    end
  end
  return taken
end

if ARGV[6] == '1' and budget > 0 then
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
