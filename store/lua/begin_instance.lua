-- Starts a provision, update or deprovision: takes the instance's exclusive lock and records the
-- operation, or answers why not. One round trip; nothing is written unless the answer is
-- "accepted" (or a waiter is added to an operation already running).
-- KEYS[1] instance: the instance hash
-- KEYS[2] op: the new operation hash
-- KEYS[3] queue: the queue zset
-- KEYS[4] waiters: the new operation's waiters set
-- KEYS[5] bindings: the instance's set of binding keys
-- ARGV[1] kind: provision, update or deprovision
-- ARGV[2] operation_id: the new operation's id
-- ARGV[3] digest: the request's idempotency digest
-- ARGV[4] now: ms
-- ARGV[5] waiting_gateway: the waiting gateway's id, or ""
-- ARGV[6] service_id: service id
-- ARGV[7] plan_id: plan id
-- ARGV[8] parameters: JSON, or ""
-- ARGV[9] context: JSON, or ""
-- ARGV[10] maintenance_version: or ""
-- ARGV[11] dashboard_url: or ""
-- ARGV[12] job: the encoded job
-- ARGV[13] claim_deadline: ms
-- ARGV[14] expected_plan_id: the expected current plan, or ""
-- ARGV[15] prefix: the key prefix "<ns>:"
-- ARGV[16] instance_id: instance id
-- ARGV[17] api_version: the request's API version
-- ARGV[18] quotas: the counters (common/policy.h) the instance holds: lines "<limit> <key>";
--          "" for none; "-" on an update that keeps the plan (its counters stay as they are)
-- ARGV[19] platform: the platform asking: recorded on a new instance; an instance another
--          platform made answers as if it did not exist (provision over a live one: conflict)
-- ARGV[20] tenant: whose work it is (docs/reliability.md, fairness): recorded on a new
--          instance; every operation of the instance is its instance's tenant's (this one for
--          an instance recorded before tenants were)
-- ARGV[21] in_progress_cap: the most operations the operation's tenant may have in progress
--          (OSBQ_POLICY in_progress_per_tenant), or "" when its platform has no cap; a
--          deprovision is counted but never refused
-- Returns {answer, operation id?, dashboard url?, metadata?, "", tenant?}; answers: accepted, in_progress,
-- done, conflict, busy, not_found, gone, changed, mismatch; or {'quota', line, used} when the
-- quota on that line (1-based) is full; or {'capped', in progress, tenant} when the tenant's
-- cap is reached.
-- requires: in_progress (store/lua/lib/in_progress.lua: in_progress_refusal, in_progress_take)
-- requires: join (store/lua/lib/join.lua: join)
local inst, op_key, queue, waiters = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local kind, op_id, digest, now, gateway = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local prefix, platform = ARGV[15], ARGV[19]
local cap = tonumber(ARGV[21]) -- nil: no cap, and no command run for one

local rec = redis.call('HMGET', inst, 'state', 'digest', 'lock_x', 'lock_s', 'last_op',
                       'plan_id', 'dashboard_url', 'metadata', 'platform', 'tenant')
local state, inst_digest, lock_x, lock_s = rec[1], rec[2], rec[3], tonumber(rec[4] or '0')
local last_op, current_plan = rec[5], rec[6]
-- Records from before platforms were recorded belong to the default platform.
local theirs = state and (rec[9] or 'default') ~= platform

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
-- there is one; `waited`, the id of the gateway that waits for the outcome (finish.lua wakes
-- it; a second one that joins moves both to the waiters set).
-- One write of the operation and one of the instance: inst_fields (a provision's new
-- instance) go with the lock.
local function record(plan_id, prev_plan, inst_fields)
  local tenant = rec[10] or ARGV[20]
  local fields = {'kind', kind, 'instance', ARGV[16], 'service_id', ARGV[6], 'plan_id', plan_id,
                  'state', 'queued', 'attempt', '0', 'created_ms', now, 'api', ARGV[17],
                  'job', ARGV[12], 'tenant', tenant}
  local function add(name, value)
    table.insert(fields, name)
    table.insert(fields, value)
  end
  if inst ~= prefix .. 'instance:' .. ARGV[16] then add('instance_key', inst) end
  if KEYS[5] ~= prefix .. 'bindings:' .. ARGV[16] then add('bindings_key', KEYS[5]) end
  if prev_plan ~= '' then add('prev_plan_id', prev_plan) end
  if kind == 'update' then
    add('digest', digest)
    if ARGV[8] ~= '' then add('parameters', ARGV[8]) end
    if ARGV[9] ~= '' then add('context', ARGV[9]) end
    if ARGV[10] ~= '' then add('maintenance_version', ARGV[10]) end
  end
  if gateway ~= '' then add('waited', gateway) end
  if cap then add('in_progress_key', in_progress_take(prefix, tenant)) end
  redis.call('HSET', op_key, unpack(fields))
  redis.call('ZADD', queue, ARGV[13], op_id)
  table.insert(inst_fields, 'lock_x')
  table.insert(inst_fields, op_id)
  table.insert(inst_fields, 'last_op')
  table.insert(inst_fields, op_id)
  redis.call('HSET', inst, unpack(inst_fields))
  return {'accepted', op_id, rec[7] or '', rec[8] or '', '', tenant}
end

if kind == 'provision' then
  -- Another platform's id stays its own until deleted (a failed one too: its platform may
  -- still deprovision it).
  if theirs and state ~= 'gone' then return {'conflict'} end
  if state and state ~= 'failed' and state ~= 'gone' then
    if inst_digest ~= digest then return {'conflict'} end
    if state == 'provisioned' then
      if lock_x or lock_s > 0 then return {'busy'} end
      return {'done', last_op, rec[7] or '', rec[8] or ''}
    end
    -- provisioning: the lock holder is the provision itself
    if not lock_x then return {'busy'} end
    return join(prefix, lock_x, gateway)
  end
  if lock_x or lock_s > 0 then return {'busy'} end
  local quotas = parse_quotas(ARGV[18])
  local refused = quota_refusal(quotas, {})
  if not refused and cap then refused = in_progress_refusal(prefix, ARGV[20], cap) end
  if refused then return refused end
  -- A failed or deleted instance's record is replaced whole.
  if state then redis.call('DEL', inst) end
  local fields = {'instance_id', ARGV[16], 'service_id', ARGV[6], 'plan_id', ARGV[7],
                  'state', 'provisioning', 'digest', digest, 'created_ms', now,
                  'platform', platform, 'tenant', ARGV[20]}
  local taken = quota_take(quotas, {})
  for i, name in ipairs({'quota_keys', 'parameters', 'context', 'maintenance_version',
                         'dashboard_url'}) do
    local value = ({taken, ARGV[8], ARGV[9], ARGV[10], ARGV[11]})[i]
    if value ~= '' then
      table.insert(fields, name)
      table.insert(fields, value)
    end
  end
  rec[7] = ARGV[11]
  rec[10] = ARGV[20]
  return record(ARGV[7], '', fields)
end

if kind == 'update' then
  if state ~= 'provisioned' or theirs then return {'not_found'} end
  if lock_x then
    local running = redis.call('HMGET', prefix .. 'op:' .. lock_x, 'kind', 'digest')
    if running[1] == 'update' and running[2] == digest then
      return join(prefix, lock_x, gateway)
    end
    return {'busy'}
  end
  if lock_s > 0 then return {'busy'} end
  if ARGV[14] ~= '' and ARGV[14] ~= current_plan then return {'changed'} end
  local target = ARGV[7] ~= '' and ARGV[7] or current_plan
  local capped = cap and in_progress_refusal(prefix, rec[10] or ARGV[20], cap)
  if ARGV[18] == '-' then return capped or record(target, current_plan, {}) end
  -- A plan change counts against the new plan's quotas now; finish.lua gives back the old
  -- plan's on success, or what was taken here on failure.
  local held = {}
  for key in string.gmatch(redis.call('HGET', inst, 'quota_keys') or '', '[^\n]+') do
    held[key] = true
  end
  local quotas = parse_quotas(ARGV[18])
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
  local service = redis.call('HGET', inst, 'service_id')
  if ARGV[7] ~= current_plan or ARGV[6] ~= service then return {'mismatch', '', '', ''} end
  if lock_x then
    local running = redis.call('HGET', prefix .. 'op:' .. lock_x, 'kind')
    if running == 'deprovision' then return join(prefix, lock_x, gateway) end
    return {'busy'}
  end
  if lock_s > 0 then return {'busy'} end
  return record(current_plan, current_plan, {})
end

return redis.error_reply('unknown operation kind ' .. kind)
