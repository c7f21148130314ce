-- A worker records the outcome of an operation: its state, the instance's new attributes, the
-- lock freed, the average duration for Retry-After, and synchronous waiters woken. Atomic.
-- Each record is read once and written once where it can be (docs/capacity.md): the operation
-- (its history included) in one HMGET, one HSET, one HDEL; the lock freed without reading it
-- (the operation holds its instance's or binding's lock_x until this script runs: only the
-- begin scripts take it, only this one frees it).
-- KEYS[1] op: the operation hash
-- KEYS[2] queue: the queue zset
-- KEYS[3] waiters: the operation's waiters set
-- ARGV[1] worker_id: worker id
-- ARGV[2] succeeded: "1" succeeded, "0" failed
-- ARGV[3] description: the outcome's text
-- ARGV[4] dashboard_url: or ""
-- ARGV[5] metadata: JSON, or ""
-- ARGV[6] instance_usable: "1" or "0"
-- ARGV[7] update_repeatable: "1" or "0"
-- ARGV[8] now: ms
-- ARGV[9] retention: s
-- ARGV[10] prefix: the key prefix "<ns>:"
-- ARGV[11] operation_id: operation id
-- ARGV[12] binding: bind: JSON of the binding (credentials, endpoints, ...), or ""
-- ARGV[13] mode: "abandon": the recovery loop gives up on an operation whose lease ran out, or
--          that waits (any worker); "operator": an operator fails an unfinished operation
--          (osbq-ctl fail); or ""
-- Returns 1, or 0 when the operation is no longer this worker's.
-- requires: history (store/lua/lib/history.lua: add_history)
local op_key, queue, waiters = KEYS[1], KEYS[2], KEYS[3]
local rec = redis.call('HMGET', op_key, 'state', 'worker', 'kind', 'instance_key', 'plan_id',
                       'parameters', 'context', 'maintenance_version', 'created_ms',
                       'binding_key', 'bindings_key', 'quota_taken', 'quota_keys',
                       'instance', 'binding', 'tenant', 'lease_until', 'history', 'waited',
                       'in_progress_key')
local now, retention = tonumber(ARGV[8]), tonumber(ARGV[9])
if ARGV[13] == 'abandon' then
  if rec[1] ~= 'queued' and rec[1] ~= 'waiting' and
      not (rec[1] == 'running' and tonumber(rec[17] or '0') < now) then
    return 0
  end
elseif ARGV[13] == 'operator' then
  if rec[1] ~= 'queued' and rec[1] ~= 'running' and rec[1] ~= 'waiting' then return 0 end
elseif rec[1] ~= 'running' or rec[2] ~= ARGV[1] then
  return 0
end
local ok = ARGV[2] == '1'
local op_id, prefix = ARGV[11], ARGV[10]
-- The begin scripts record a key only when it is not the plain one built here.
local kind, plan_id, tenant = rec[3], rec[5], rec[16]
local inst = rec[4] or (prefix .. 'instance:' .. rec[14])
local binding = rec[10] or (rec[15] and (prefix .. 'binding:' .. rec[14] .. ':' .. rec[15]))
local bindings_set = rec[11] or (prefix .. 'bindings:' .. rec[14])

local event = ok and 'succeeded' or 'failed'
if ARGV[13] == 'abandon' then event = 'abandoned' end
if ARGV[13] == 'operator' then event = 'failed_by_operator' end
local op_fields = {'state', ok and 'succeeded' or 'failed', 'description', ARGV[3],
                   'finished_ms', now, 'history',
                   history_with(rec[18], {ms = now, event = event, worker = rec[2],
                                          description = ARGV[3]})}
if not ok and (kind == 'update' or kind == 'deprovision') then
  table.insert(op_fields, 'instance_usable')
  table.insert(op_fields, ARGV[6])
  if kind == 'update' then
    table.insert(op_fields, 'update_repeatable')
    table.insert(op_fields, ARGV[7])
  end
end
redis.call('HSET', op_key, unpack(op_fields))
-- What only an unfinished operation needs goes (the job, its step's state, its lease).
redis.call('HDEL', op_key, 'job', 'lease_until', 'resume', 'due_ms', 'tenant', 'waited')
redis.call('EXPIRE', op_key, retention)
-- The tenant's count of operations in progress (OSBQ_POLICY in_progress_per_tenant), where the
-- begin script counted it; once: the state checked above is final from here on.
if rec[20] and tonumber(redis.call('DECR', rec[20])) <= 0 then redis.call('DEL', rec[20]) end
redis.call('ZREM', queue, op_id)
-- Ended while waiting (an operator, or the recovery loop giving up): out of its tenant's polls.
if rec[1] == 'waiting' and tenant and tenant ~= '' then
  redis.call('ZREM', prefix .. 'polls:' .. tenant, op_id)
end

-- Gives back quota counters (begin_instance.lua took them), except those in keep.
local function quota_release(keys_text, keep)
  for key in string.gmatch(keys_text or '', '[^\n]+') do
    if not keep[key] and tonumber(redis.call('DECR', key)) <= 0 then redis.call('DEL', key) end
  end
end

if binding then
  -- Binding operations hold the instance shared and their binding exclusively.
  if tonumber(redis.call('HINCRBY', inst, 'lock_s', -1)) <= 0 then
    redis.call('HDEL', inst, 'lock_s')
  end
  if kind == 'bind' then
    if ok and ARGV[12] ~= '' then
      redis.call('HSET', binding, 'state', 'bound', 'result', ARGV[12])
    else
      redis.call('HSET', binding, 'state', ok and 'bound' or 'failed')
    end
    redis.call('HDEL', binding, 'lock_x')
  elseif kind == 'unbind' and ok then
    redis.call('HSET', binding, 'state', 'gone')
    redis.call('HDEL', binding, 'result', 'lock_x')
    redis.call('EXPIRE', binding, retention)
    redis.call('SREM', bindings_set, binding)
  else
    redis.call('HDEL', binding, 'lock_x')
  end
else
  -- The instance: its new state and attributes in one write, its lock and what it no longer
  -- holds in one delete.
  local set, del = {}, {'lock_x'}
  if ok then
    if ARGV[4] ~= '' then
      table.insert(set, 'dashboard_url')
      table.insert(set, ARGV[4])
    end
    if ARGV[5] ~= '' then
      table.insert(set, 'metadata')
      table.insert(set, ARGV[5])
    end
  end
  if kind == 'provision' then
    table.insert(set, 'state')
    table.insert(set, ok and 'provisioned' or 'failed')
    if not ok then
      quota_release(redis.call('HGET', inst, 'quota_keys'), {})
      table.insert(del, 'quota_keys')
    end
  elseif kind == 'update' and not ok then
    quota_release(rec[12], {})
  elseif kind == 'update' and ok then
    if rec[13] then
      -- The plan changed: the instance now holds the new plan's quotas and no others.
      local keep = {}
      for key in string.gmatch(rec[13], '[^\n]+') do keep[key] = true end
      quota_release(redis.call('HGET', inst, 'quota_keys'), keep)
      if rec[13] ~= '' then
        table.insert(set, 'quota_keys')
        table.insert(set, rec[13])
      else
        table.insert(del, 'quota_keys')
      end
    end
    for i, name in ipairs({'plan_id', 'parameters', 'context', 'maintenance_version'}) do
      local value = ({plan_id, rec[6], rec[7], rec[8]})[i]
      if value then
        table.insert(set, name)
        table.insert(set, value)
      end
    end
  elseif kind == 'deprovision' and ok then
    quota_release(redis.call('HGET', inst, 'quota_keys'), {})
    table.insert(del, 'quota_keys')
    table.insert(set, 'state')
    table.insert(set, 'gone')
    redis.call('EXPIRE', inst, retention)
    -- Bindings the platform did not delete first go with their instance (docs/decisions/0004).
    for _, bkey in ipairs(redis.call('SMEMBERS', bindings_set)) do
      redis.call('HSET', bkey, 'state', 'gone')
      redis.call('HDEL', bkey, 'result', 'lock_x')
      redis.call('EXPIRE', bkey, retention)
    end
    redis.call('DEL', bindings_set)
  end
  if #set > 0 then redis.call('HSET', inst, unpack(set)) end
  redis.call('HDEL', inst, unpack(del))
end

-- Average duration per plan and kind (exponentially weighted), for adaptive Retry-After:
-- sampled, one operation in eight (by its id's last byte), which is plenty for an average and
-- saves its read and write on the others.
if string.byte(op_id, -1) % 8 == 0 then
  local took = now - tonumber(rec[9] or now)
  local stats = prefix .. 'stats:' .. plan_id
  local avg = tonumber(redis.call('HGET', stats, kind) or '-1')
  if avg < 0 then avg = took else avg = math.floor(avg * 0.8 + took * 0.2) end
  redis.call('HSET', stats, kind, avg)
end

-- Synchronous waiters: the gateway that waits ('waited', its id), or several in the waiters set
-- ('waited' is '*'); an operation without a tenant (begun by the previous release) keeps them in
-- the set.
local gateways = {}
if rec[19] == '*' or not tenant then
  gateways = redis.call('SMEMBERS', waiters)
  if #gateways > 0 then redis.call('DEL', waiters) end
elseif rec[19] then
  gateways = {rec[19]}
end
if #gateways > 0 then
  local outcome = cjson.encode({operation = op_id, state = ok and 'succeeded' or 'failed',
                                description = ARGV[3], dashboard_url = ARGV[4],
                                metadata = ARGV[5], instance_usable = ARGV[6] == '1',
                                update_repeatable = ARGV[7] == '1'})
  for _, gw in ipairs(gateways) do
    redis.call('PUBLISH', prefix .. 'events:' .. gw, outcome)
  end
end
return 1
