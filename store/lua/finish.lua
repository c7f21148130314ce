-- A worker records the outcome of an operation: its state, the instance's new attributes, the
-- lock freed, the average duration for Retry-After, and synchronous waiters woken. Atomic.
-- Each record is read once and written once where it can be (docs/capacity.md): the operation
-- (its history included) in one HMGET, one HSET, one HDEL; the lock freed without reading it
-- (the operation holds its instance's or binding's lock_x until this script runs: only the
-- begin scripts take it, only this one frees it).
-- Returns 1, or 0 when the operation is no longer this worker's.
-- requires: history (store/lua/lib/history.lua: history_with)
-- requires: fields (store/lua/lib/fields.lua: read_fields)
-- requires: release (store/lua/lib/release.lua: begun_by_previous_release)
local KEY = {
  op = KEYS[1],       -- the operation hash
  queue = KEYS[2],    -- the queue zset
  waiters = KEYS[3],  -- the operation's waiters set
}
local ARG = {
  worker_id = ARGV[1],          -- worker id
  succeeded = ARGV[2],          -- "1" succeeded, "0" failed
  description = ARGV[3],        -- the outcome's text
  dashboard_url = ARGV[4],      -- or ""
  metadata = ARGV[5],           -- JSON, or ""
  instance_usable = ARGV[6],    -- "1" or "0"
  update_repeatable = ARGV[7],  -- "1" or "0"
  now = ARGV[8],                -- ms
  retention = ARGV[9],          -- s
  prefix = ARGV[10],            -- the key prefix "<ns>:"
  operation_id = ARGV[11],      -- operation id
  binding = ARGV[12],           -- bind: JSON of the binding (credentials, endpoints, ...), or ""
  mode = ARGV[13],              -- "abandon": the recovery loop gives up on an operation whose
                                -- lease ran out, or that waits (any worker); "operator": an
                                -- operator fails an unfinished operation (osbq-ctl fail); or ""
}
local op_key = KEY.op
local op = read_fields(op_key, {'state', 'worker', 'kind', 'instance_key', 'plan_id',
                                'parameters', 'context', 'maintenance_version', 'created_ms',
                                'binding_key', 'bindings_key', 'quota_taken', 'quota_keys',
                                'instance', 'binding', 'tenant', 'lease_until', 'history',
                                'waited', 'in_progress_key', 'started_ms', 'quotas_held',
                                'service_id'})
local previous_release = begun_by_previous_release(op)
local now, retention = tonumber(ARG.now), tonumber(ARG.retention)
if ARG.mode == 'abandon' then
  if op.state ~= 'queued' and op.state ~= 'waiting' and
      not (op.state == 'running' and tonumber(op.lease_until or '0') < now) then
    return 0
  end
elseif ARG.mode == 'operator' then
  if op.state ~= 'queued' and op.state ~= 'running' and op.state ~= 'waiting' then return 0 end
elseif op.state ~= 'running' or op.worker ~= ARG.worker_id then
  return 0
end
local ok = ARG.succeeded == '1'
local op_id, prefix = ARG.operation_id, ARG.prefix
-- The begin scripts record a key only when it is not the plain one built here.
local kind, plan_id, tenant = op.kind, op.plan_id, op.tenant
local inst = op.instance_key or (prefix .. 'instance:' .. op.instance)
local binding = op.binding_key or
                (op.binding and (prefix .. 'binding:' .. op.instance .. ':' .. op.binding))
local bindings_set = op.bindings_key or (prefix .. 'bindings:' .. op.instance)

local event = ok and 'succeeded' or 'failed'
if ARG.mode == 'abandon' then event = 'abandoned' end
if ARG.mode == 'operator' then event = 'failed_by_operator' end
local op_fields = {'state', ok and 'succeeded' or 'failed', 'description', ARG.description,
                   'finished_ms', now}
-- A worker's outcome of this release's operation is said by the fields just written
-- (lib/history.lua); the recovery loop's and an operator's are events of their own, and the
-- previous release's operations keep every event written.
if ARG.mode ~= '' or previous_release then
  table.insert(op_fields, 'history')
  table.insert(op_fields, history_with(op.history, {ms = now, event = event, worker = op.worker,
                                                    description = ARG.description}, op))
end
if not ok and (kind == 'update' or kind == 'deprovision') then
  table.insert(op_fields, 'instance_usable')
  table.insert(op_fields, ARG.instance_usable)
  if kind == 'update' then
    table.insert(op_fields, 'update_repeatable')
    table.insert(op_fields, ARG.update_repeatable)
  end
end
redis.call('HSET', op_key, unpack(op_fields))
-- What only an unfinished operation needs goes (the job, its step's state, its lease).
redis.call('HDEL', op_key, 'job', 'lease_until', 'resume', 'due_ms', 'tenant', 'waited',
           'quotas_held')
redis.call('EXPIRE', op_key, retention)
-- The tenant's count of operations in progress (OSBQ_POLICY in_progress_per_tenant), where the
-- begin script counted it; once: the state checked above is final from here on.
if op.in_progress_key and tonumber(redis.call('DECR', op.in_progress_key)) <= 0 then
  redis.call('DEL', op.in_progress_key)
end
redis.call('ZREM', KEY.queue, op_id)
-- Ended while waiting (an operator, or the recovery loop giving up): out of its tenant's polls.
if op.state == 'waiting' and tenant and tenant ~= '' then
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
    if ok and ARG.binding ~= '' then
      redis.call('HSET', binding, 'state', 'bound', 'result', ARG.binding)
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
    if ARG.dashboard_url ~= '' then
      table.insert(set, 'dashboard_url')
      table.insert(set, ARG.dashboard_url)
    end
    if ARG.metadata ~= '' then
      table.insert(set, 'metadata')
      table.insert(set, ARG.metadata)
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
    quota_release(op.quota_taken, {})
  elseif kind == 'update' and ok then
    if op.quota_keys then
      -- The plan changed: the instance now holds the new plan's quotas and no others.
      local keep = {}
      for key in string.gmatch(op.quota_keys, '[^\n]+') do keep[key] = true end
      quota_release(redis.call('HGET', inst, 'quota_keys'), keep)
      if op.quota_keys ~= '' then
        table.insert(set, 'quota_keys')
        table.insert(set, op.quota_keys)
      else
        table.insert(del, 'quota_keys')
      end
    end
    for i, name in ipairs({'plan_id', 'parameters', 'context', 'maintenance_version'}) do
      local value = ({plan_id, op.parameters, op.context, op.maintenance_version})[i]
      if value then
        table.insert(set, name)
        table.insert(set, value)
      end
    end
  elseif kind == 'deprovision' and ok then
    -- begin_instance.lua copied the instance's quotas to the operation (no field: it holds
    -- none); the previous release's operations did not.
    local held = op.quotas_held
    if previous_release then held = redis.call('HGET', inst, 'quota_keys') end
    quota_release(held, {})
    table.insert(del, 'quota_keys')
    table.insert(set, 'state')
    table.insert(set, 'gone')
    redis.call('EXPIRE', inst, retention)
    -- Bindings the platform did not delete first go with their instance (docs/decisions/0004);
    -- most platforms do, and an empty set is no key: nothing to delete then.
    local left = redis.call('SMEMBERS', bindings_set)
    for _, bkey in ipairs(left) do
      redis.call('HSET', bkey, 'state', 'gone')
      redis.call('HDEL', bkey, 'result', 'lock_x')
      redis.call('EXPIRE', bkey, retention)
    end
    if #left > 0 then redis.call('DEL', bindings_set) end
  end
  if #set > 0 then redis.call('HSET', inst, unpack(set)) end
  redis.call('HDEL', inst, unpack(del))
end

-- Average duration per plan and kind (exponentially weighted), for adaptive Retry-After:
-- sampled, one operation in eight (by its id's last byte), which is plenty for an average and
-- saves its read and write on the others.
if string.byte(op_id, -1) % 8 == 0 then
  local took = now - tonumber(op.created_ms or now)
  local stats = prefix .. 'stats:' .. plan_id
  local avg = tonumber(redis.call('HGET', stats, kind) or '-1')
  if avg < 0 then avg = took else avg = math.floor(avg * 0.8 + took * 0.2) end
  redis.call('HSET', stats, kind, avg)
end

-- Synchronous waiters: the gateway that waits ('waited', its id), or several in the waiters set
-- ('waited' is '*'); an operation of the previous release keeps them in the set.
local gateways = {}
if op.waited == '*' or previous_release then
  gateways = redis.call('SMEMBERS', KEY.waiters)
  if #gateways > 0 then redis.call('DEL', KEY.waiters) end
elseif op.waited then
  gateways = {op.waited}
end
if #gateways > 0 then
  local outcome = cjson.encode({operation = op_id, state = ok and 'succeeded' or 'failed',
                                description = ARG.description, dashboard_url = ARG.dashboard_url,
                                metadata = ARG.metadata,
                                instance_usable = ARG.instance_usable == '1',
                                update_repeatable = ARG.update_repeatable == '1'})
  for _, gw in ipairs(gateways) do
    redis.call('PUBLISH', prefix .. 'events:' .. gw, outcome)
  end
end
return 1
