-- Starts a provision, update or deprovision: takes the instance's exclusive lock and records the
-- operation, or answers why not. One round trip; nothing is written unless the answer is
-- "accepted" (or a waiter is added to an operation already running).
-- Returns {answer, operation id?, dashboard url?, metadata?, "", tenant?}; answers: accepted,
-- in_progress, done, conflict, busy, not_found, gone, changed, mismatch; or {'quota', line,
-- used} when the quota on that line (1-based) is full; or {'capped', in progress, tenant} when
-- the tenant's cap is reached.
-- requires: in_progress (store/lua/lib/in_progress.lua: in_progress_refusal, in_progress_take)
-- requires: join (store/lua/lib/join.lua: join)
-- requires: fields (store/lua/lib/fields.lua: read_fields)
-- requires: handover (store/lua/lib/handover.lua: handover_claim)
local KEY = {
  instance = KEYS[1],  -- the instance hash
  op = KEYS[2],        -- the new operation hash
  queue = KEYS[3],     -- the queue zset
  waiters = KEYS[4],   -- the new operation's waiters set
  bindings = KEYS[5],  -- the instance's set of binding keys
}
local ARG = {
  kind = ARGV[1],                  -- provision, update or deprovision
  operation_id = ARGV[2],          -- the new operation's id
  digest = ARGV[3],                -- the request's idempotency digest
  now = ARGV[4],                   -- ms
  waiting_gateway = ARGV[5],       -- the waiting gateway's id, or ""
  service_id = ARGV[6],            -- service id
  plan_id = ARGV[7],               -- plan id
  parameters = ARGV[8],            -- JSON, or ""
  context = ARGV[9],               -- JSON, or ""
  maintenance_version = ARGV[10],  -- or ""
  dashboard_url = ARGV[11],        -- or ""
  job = ARGV[12],                  -- the encoded job
  claim_deadline = ARGV[13],       -- ms
  expected_plan_id = ARGV[14],     -- the expected current plan, or ""
  prefix = ARGV[15],               -- the key prefix "<ns>:"
  instance_id = ARGV[16],          -- instance id
  api_version = ARGV[17],          -- the request's API version
  quotas = ARGV[18],               -- the counters (common/policy.h) the instance holds: lines
                                   -- "<limit> <key>"; "" for none; "-" on an update that keeps
                                   -- the plan (its counters stay as they are)
  platform = ARGV[19],             -- the platform asking: recorded on a new instance; an
                                   -- instance another platform made answers as if it did not
                                   -- exist (provision over a live one: conflict)
  tenant = ARGV[20],               -- whose work it is (docs/reliability.md, fairness): recorded
                                   -- on a new instance; every operation of the instance is its
                                   -- instance's tenant's (this one for an instance recorded
                                   -- before tenants were)
  in_progress_cap = ARGV[21],      -- the most operations the operation's tenant may have in
                                   -- progress (OSBQ_POLICY in_progress_per_tenant), or "" when
                                   -- its platform has no cap; a deprovision is counted but
                                   -- never refused
  handed_worker = ARGV[22],        -- the worker a new operation is handed to (claimed for it
                                   -- here, docs/decisions/0042), or "": queued for any worker's
                                   -- claim
  handed_until = ARGV[23],         -- with handed_worker: the hand-over's lease end, ms; or ""
}
local inst, op_key, queue = KEY.instance, KEY.op, KEY.queue
local kind, op_id, digest, now = ARG.kind, ARG.operation_id, ARG.digest, ARG.now
local gateway, prefix, platform = ARG.waiting_gateway, ARG.prefix, ARG.platform
local cap = tonumber(ARG.in_progress_cap) -- nil: no cap, and no command run for one
-- Handed (lib/handover.lua): a new operation is recorded as claimed for that worker.
local handed = ARG.handed_worker ~= ''

-- A deprovision checks the instance's service, and an update or a deprovision reads its quotas:
-- read with the rest, one read of the record.
local instance = read_fields(inst, {'state', 'digest', 'lock_x', 'lock_s', 'last_op', 'plan_id',
                                    'dashboard_url', 'metadata', 'platform', 'tenant',
                                    'service_id', 'quota_keys'})
local state, inst_digest, lock_x = instance.state, instance.digest, instance.lock_x
local lock_s = tonumber(instance.lock_s or '0')
local last_op, current_plan = instance.last_op, instance.plan_id
-- Records from before platforms were recorded belong to the default platform.
local theirs = state and (instance.platform or 'default') ~= platform

-- Quotas: every counter counts the instances that hold it (their 'quota_keys' field); taking
-- one checks all first, so a refusal writes nothing. finish.lua gives them back.
local function parse_quotas(spec)
  local list = {}
  for limit, key in string.gmatch(spec, '(%d+) ([^\n]+)') do
    list[#list + 1] = {key = key, limit = tonumber(limit)}
  end
  return list
end

local function quota_refusal(list, held)
  for i, q in ipairs(list) do
    if not held[q.key] then
      local used = tonumber(redis.call('GET', q.key) or '0')
      if used >= q.limit then return {'quota', tostring(i), tostring(used)} end
    end
  end
  return nil
end

-- Counts the instance against every quota of list it does not hold yet; returns what it took.
local function quota_take(list, held)
  local taken = {}
  for _, q in ipairs(list) do
    if not held[q.key] then
      redis.call('INCR', q.key)
      taken[#taken + 1] = q.key
    end
  end
  return table.concat(taken, '\n')
end

local function key_list(list)
  local keys = {}
  for _, q in ipairs(list) do keys[#keys + 1] = q.key end
  return table.concat(keys, '\n')
end

-- Only what finish.lua cannot find elsewhere is recorded, so an operation that waits for
-- hours stays small: the instance's and its bindings' keys are written only when they are not
-- plain "<prefix>instance:<id>" and "<prefix>bindings:<id>" (an id store_keys.c had to encode);
-- parameters, context and maintenance version only for an update, whose finish applies them
-- (a provision wrote them to the instance already), and its digest, which an identical update
-- joins by (a provision's or deprovision's is the instance's); the previous plan only when
-- it differs; `waited`, the id of the gateway that waits for the outcome (finish.lua wakes
-- it; a second one that joins moves both to the waiters set); no service_id (the instance's)
-- nor attempt (claims says it), docs/decisions/0041. Its platform unless it is the default one,
-- so that a poll naming the operation reads it alone (docs/decisions/0043).
-- One write of the operation and one of the instance: inst_fields (a provision's new
-- instance) go with the lock.
local quotas_held -- a deprovision's: the instance's quota counters, or nil when it holds none
local function record(plan_id, prev_plan, inst_fields)
  local tenant = instance.tenant or ARG.tenant
  local fields = {'kind', kind, 'instance', ARG.instance_id, 'plan_id', plan_id,
                  'state', handed and 'running' or 'queued', 'created_ms', now,
                  'api', ARG.api_version, 'job', ARG.job, 'tenant', tenant}
  local function add(name, value)
    table.insert(fields, name)
    table.insert(fields, value)
  end
  if inst ~= prefix .. 'instance:' .. ARG.instance_id then add('instance_key', inst) end
  if KEY.bindings ~= prefix .. 'bindings:' .. ARG.instance_id then
    add('bindings_key', KEY.bindings)
  end
  if prev_plan ~= '' and prev_plan ~= plan_id then add('prev_plan_id', prev_plan) end
  if kind == 'update' then
    add('digest', digest)
    if ARG.parameters ~= '' then add('parameters', ARG.parameters) end
    if ARG.context ~= '' then add('context', ARG.context) end
    if ARG.maintenance_version ~= '' then add('maintenance_version', ARG.maintenance_version) end
  end
  if platform ~= 'default' then add('platform', platform) end
  if gateway ~= '' then add('waited', gateway) end
  if quotas_held then add('quotas_held', quotas_held) end
  if cap then add('in_progress_key', in_progress_take(prefix, tenant)) end
  local due = ARG.claim_deadline
  if handed then due = handover_claim(add, ARG.handed_worker, ARG.handed_until, now) end
  redis.call('HSET', op_key, unpack(fields))
  redis.call('ZADD', queue, due, op_id)
  table.insert(inst_fields, 'lock_x')
  table.insert(inst_fields, op_id)
  table.insert(inst_fields, 'last_op')
  table.insert(inst_fields, op_id)
  redis.call('HSET', inst, unpack(inst_fields))
  return {'accepted', op_id, instance.dashboard_url or '', instance.metadata or '', '', tenant}
end

if kind == 'provision' then
  -- Another platform's id stays its own until deleted (a failed one too: its platform may
  -- still deprovision it).
  if theirs and state ~= 'gone' then return {'conflict'} end
  if state and state ~= 'failed' and state ~= 'gone' then
    if inst_digest ~= digest then return {'conflict'} end
    if state == 'provisioned' then
      if lock_x or lock_s > 0 then return {'busy'} end
      return {'done', last_op, instance.dashboard_url or '', instance.metadata or ''}
    end
    -- provisioning: the lock holder is the provision itself
    if not lock_x then return {'busy'} end
    return join(prefix, lock_x, gateway)
  end
  if lock_x or lock_s > 0 then return {'busy'} end
  local quotas = parse_quotas(ARG.quotas)
  local refused = quota_refusal(quotas, {})
  if not refused and cap then refused = in_progress_refusal(prefix, ARG.tenant, cap) end
  if refused then return refused end
  -- A failed or deleted instance's record is replaced whole.
  if state then redis.call('DEL', inst) end
  local fields = {'instance_id', ARG.instance_id, 'service_id', ARG.service_id,
                  'plan_id', ARG.plan_id, 'state', 'provisioning', 'digest', digest,
                  'created_ms', now, 'platform', platform, 'tenant', ARG.tenant}
  local taken = quota_take(quotas, {})
  for i, name in ipairs({'quota_keys', 'parameters', 'context', 'maintenance_version',
                         'dashboard_url'}) do
    local value = ({taken, ARG.parameters, ARG.context, ARG.maintenance_version,
                    ARG.dashboard_url})[i]
    if value ~= '' then
      table.insert(fields, name)
      table.insert(fields, value)
    end
  end
  instance.dashboard_url = ARG.dashboard_url
  instance.tenant = ARG.tenant
  return record(ARG.plan_id, '', fields)
end

if kind == 'update' then
  if state ~= 'provisioned' or theirs then return {'not_found'} end
  if lock_x then
    local running = read_fields(prefix .. 'op:' .. lock_x, {'kind', 'digest'})
    if running.kind == 'update' and running.digest == digest then
      return join(prefix, lock_x, gateway)
    end
    return {'busy'}
  end
  if lock_s > 0 then return {'busy'} end
  local expected = ARG.expected_plan_id
  if expected ~= '' and expected ~= current_plan then return {'changed'} end
  local target = ARG.plan_id ~= '' and ARG.plan_id or current_plan
  local capped = cap and in_progress_refusal(prefix, instance.tenant or ARG.tenant, cap)
  if ARG.quotas == '-' then return capped or record(target, current_plan, {}) end
  -- A plan change counts against the new plan's quotas now; finish.lua gives back the old
  -- plan's on success, or what was taken here on failure.
  local held = {}
  for key in string.gmatch(instance.quota_keys or '', '[^\n]+') do
    held[key] = true
  end
  local quotas = parse_quotas(ARG.quotas)
  local refused = quota_refusal(quotas, held) or capped
  if refused then return refused end
  local reply = record(target, current_plan, {})
  redis.call('HSET', op_key, 'quota_taken', quota_take(quotas, held), 'quota_keys',
             key_list(quotas))
  return reply
end

if kind == 'deprovision' then
  if not state or state == 'gone' or theirs then return {'gone'} end
  -- The job runs the backend of the plan it names: it must be the instance's.
  if ARG.plan_id ~= current_plan or ARG.service_id ~= instance.service_id then
    return {'mismatch', '', '', ''}
  end
  if lock_x then
    local running = redis.call('HGET', prefix .. 'op:' .. lock_x, 'kind')
    if running == 'deprovision' then return join(prefix, lock_x, gateway) end
    return {'busy'}
  end
  if lock_s > 0 then return {'busy'} end
  -- The quotas finish.lua gives back, as read here (the lock keeps them as they are): it need
  -- not read the instance for them.
  if instance.quota_keys then quotas_held = instance.quota_keys end
  return record(current_plan, current_plan, {})
end

return redis.error_reply('unknown operation kind ' .. kind)
