-- Starts a bind or unbind: holds the instance in shared mode (lock_s) and the binding
-- exclusively (its lock_x), and records the operation; or answers why not. One round trip;
-- nothing is written unless the answer is "accepted" (or a waiter joins a running operation).
-- KEYS[1] instance: the instance hash
-- KEYS[2] binding: the binding hash
-- KEYS[3] op: the new operation hash
-- KEYS[4] queue: the queue zset
-- KEYS[5] waiters: the new operation's waiters set
-- KEYS[6] bindings: the instance's set of binding keys
-- ARGV[1] kind: bind or unbind
-- ARGV[2] operation_id: the new operation's id
-- ARGV[3] digest: the request's idempotency digest
-- ARGV[4] now: ms
-- ARGV[5] waiting_gateway: the waiting gateway's id, or ""
-- ARGV[6] service_id: service id
-- ARGV[7] plan_id: plan id
-- ARGV[8] parameters: JSON, or ""
-- ARGV[9] context: JSON, or ""
-- ARGV[10] bind_resource: JSON, or ""
-- ARGV[11] job: the encoded job
-- ARGV[12] claim_deadline: ms
-- ARGV[13] prefix: the key prefix "<ns>:"
-- ARGV[14] instance_id: instance id
-- ARGV[15] binding_id: binding id
-- ARGV[16] api_version: the request's API version
-- ARGV[17] predecessor_key: the predecessor binding's key, or ""
-- ARGV[18] predecessor_id: the predecessor binding's id, or ""
-- ARGV[19] platform: the platform asking: recorded on a new binding; another platform's
--          instance or binding answers as if it did not exist
-- ARGV[20] tenant: whose work it is when the instance has no tenant recorded (one from
--          before tenants were): an instance's bindings are its tenant's
-- ARGV[21] in_progress_cap: the most operations the operation's tenant may have in progress
--          (OSBQ_POLICY in_progress_per_tenant), or "" when its platform has no cap; an unbind
--          is counted but never refused
-- Returns {answer, operation id?, "", "", binding result JSON?, tenant?}; answers: accepted, in_progress, done,
-- conflict, busy, no_instance, instance_busy, gone, mismatch, bad_predecessor; or
-- {'capped', in progress, tenant} when the tenant's cap is reached.
-- requires: in_progress (store/lua/lib/in_progress.lua: in_progress_refusal, in_progress_take)
-- requires: join (store/lua/lib/join.lua: join)
local inst, binding, op_key, queue, waiters, set = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5],
                                                   KEYS[6]
local kind, op_id, digest, now, gateway = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local prefix, platform = ARGV[13], ARGV[19]
local cap = tonumber(ARGV[21]) -- nil: no cap, and no command run for one

local irec = redis.call('HMGET', inst, 'state', 'lock_x', 'service_id', 'plan_id', 'platform',
                        'tenant')
local brec = redis.call('HMGET', binding, 'state', 'digest', 'lock_x', 'last_op', 'result',
                        'platform')
local istate, ilock, bstate, bdigest, block = irec[1], irec[2], brec[1], brec[2], brec[3]
-- Records from before platforms were recorded belong to the default platform.
local instance_theirs = istate and (irec[5] or 'default') ~= platform
local binding_theirs = bstate and (brec[6] or 'default') ~= platform


-- The keys finish.lua needs are written only when they are not the plain "<prefix>instance:<id>",
-- "<prefix>binding:<id>:<binding id>" and "<prefix>bindings:<id>" (an id store_keys.c had to
-- encode): a waiting operation stays small (begin_instance.lua does the same); `waited`, the
-- gateway that waits for the outcome, as begin_instance.lua records it. One write of the operation and one of the binding:
-- binding_fields (a bind's new binding) go with its lock.
local function record(binding_fields)
  local tenant = irec[6] or ARGV[20]
  local fields = {'kind', kind, 'instance', ARGV[14], 'binding', ARGV[15],
                  'service_id', ARGV[6], 'plan_id', ARGV[7], 'state', 'queued', 'attempt', '0',
                  'created_ms', now, 'api', ARGV[16], 'job', ARGV[11], 'tenant', tenant}
  local function add(name, value)
    table.insert(fields, name)
    table.insert(fields, value)
  end
  if inst ~= prefix .. 'instance:' .. ARGV[14] then add('instance_key', inst) end
  if binding ~= prefix .. 'binding:' .. ARGV[14] .. ':' .. ARGV[15] then
    add('binding_key', binding)
  end
  if set ~= prefix .. 'bindings:' .. ARGV[14] then add('bindings_key', set) end
  if gateway ~= '' then add('waited', gateway) end
  if cap then add('in_progress_key', in_progress_take(prefix, tenant)) end
  redis.call('HSET', op_key, unpack(fields))
  redis.call('ZADD', queue, ARGV[12], op_id)
  table.insert(binding_fields, 'lock_x')
  table.insert(binding_fields, op_id)
  table.insert(binding_fields, 'last_op')
  table.insert(binding_fields, op_id)
  redis.call('HSET', binding, unpack(binding_fields))
  redis.call('HINCRBY', inst, 'lock_s', 1)
  return {'accepted', op_id, '', '', '', tenant}
end

if kind == 'bind' then
  if not istate or istate == 'failed' or istate == 'gone' or instance_theirs then
    return {'no_instance'}
  end
  -- A binding left by another platform under this id (of an earlier instance) stays its own.
  if binding_theirs and bstate ~= 'gone' then return {'conflict'} end
  if istate ~= 'provisioned' or ilock then return {'instance_busy'} end
  if ARGV[6] ~= irec[3] or ARGV[7] ~= irec[4] then return {'mismatch'} end
  if bstate and bstate ~= 'failed' and bstate ~= 'gone' then
    if bdigest ~= digest then return {'conflict'} end
    if bstate == 'bound' then
      if block then return {'busy'} end
      return {'done', brec[4], '', '', brec[5] or ''}
    end
    if not block then return {'busy'} end
    return join(prefix, block, gateway)
  end
  if block then return {'busy'} end
  if ARGV[17] ~= '' then
    local pred = redis.call('HMGET', ARGV[17], 'state', 'instance_id')
    if pred[1] ~= 'bound' or pred[2] ~= ARGV[14] then return {'bad_predecessor'} end
  end
  local capped = cap and in_progress_refusal(prefix, irec[6] or ARGV[20], cap)
  if capped then return capped end
  -- A failed or deleted binding's record is replaced whole.
  if bstate then redis.call('DEL', binding) end
  local fields = {'binding_id', ARGV[15], 'instance_id', ARGV[14], 'service_id', ARGV[6],
                  'plan_id', ARGV[7], 'state', 'binding', 'digest', digest, 'created_ms', now,
                  'platform', platform}
  for i, name in ipairs({'parameters', 'context', 'bind_resource', 'predecessor'}) do
    local value = ({ARGV[8], ARGV[9], ARGV[10], ARGV[18]})[i]
    if value ~= '' then
      table.insert(fields, name)
      table.insert(fields, value)
    end
  end
  redis.call('SADD', set, binding)
  return record(fields)
end

if kind == 'unbind' then
  if not bstate or bstate == 'gone' or binding_theirs then return {'gone'} end
  if block then
    local running = redis.call('HGET', prefix .. 'op:' .. block, 'kind')
    if running == 'unbind' then return join(prefix, block, gateway) end
    return {'busy'}
  end
  if ilock then return {'instance_busy'} end
  local bsvc = redis.call('HMGET', binding, 'service_id', 'plan_id')
  if ARGV[6] ~= bsvc[1] or ARGV[7] ~= bsvc[2] then return {'mismatch'} end
  return record({})
end

return redis.error_reply('unknown operation kind ' .. kind)
