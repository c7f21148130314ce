-- A worker records the outcome of an operation: its state, the instance's new attributes, the
-- lock freed, the average duration for Retry-After, and synchronous waiters woken. Atomic.
-- Each record is read once and written once where it can be (docs/capacity.md): the operation
-- (its history included) in one HMGET, one HSET, one HDEL; the lock freed without reading it
-- (the operation holds its instance's or binding's lock_x until this script runs: only the
-- begin scripts take it, only this one frees it).
-- Returns 1, 2 when it ended a creation a delete halted (lib/halt.lua), or 0 when the operation
-- is no longer this worker's.
-- requires: history (store/lua/lib/history.lua: history_with)
-- requires: release (store/lua/lib/release.lua: begun_by_previous_release)
-- requires: halt (store/lua/lib/halt.lua: queue_after_halt)
-- requires: records_gone (store/lua/lib/records_gone.lua: quota_release, binding_gone)
-- requires: record_counts (store/lua/lib/record_counts.lua: record_counts_move, _mark)
-- requires: events (store/lua/lib/events.lua: event_add)
-- requires: fields (store/lua/lib/fields.lua: read_fields)
local key_op = KEYS[1]       -- the operation hash
local key_queue = KEYS[2]    -- the queue zset
local key_waiters = KEYS[3]  -- the operation's waiters set
local arg_worker_id = ARGV[1]          -- worker id
local arg_succeeded = ARGV[2]          -- "1" succeeded, "0" failed
local arg_description = ARGV[3]        -- the outcome's text
local arg_dashboard_url = ARGV[4]      -- or ""
local arg_metadata = ARGV[5]           -- JSON, or ""
local arg_instance_usable = ARGV[6]    -- "1" or "0"
local arg_update_repeatable = ARGV[7]  -- "1" or "0"
local arg_now = ARGV[8]                -- ms
local arg_retention = ARGV[9]          -- s
local arg_prefix = ARGV[10]            -- the key prefix "<ns>:"
local arg_operation_id = ARGV[11]      -- operation id
local arg_binding = ARGV[12]           -- bind: JSON of the binding (credentials,
                                       -- endpoints, ...), or ""
local arg_mode = ARGV[13]              -- "abandon": the recovery loop gives up on an operation
                                       -- whose lease ran out, or that waits (any worker);
                                       -- "operator": an operator fails an unfinished operation
                                       -- (osbq-ctl fail); "sync_limit": the gateway whose
                                       -- synchronous request's time ran out fails it
                                       -- (docs/decisions/0048); "halted": the worker whose
                                       -- step a delete halted, once it stopped (a halting
                                       -- operation only, docs/decisions/0051); or ""
local arg_events_max = ARGV[14]        -- the events the audit trail keeps (OSBQ_EVENTS_MAX,
                                       -- lib/events.lua), "0" for none
local arg_by = ARGV[15]                -- "operator": who failed it (osbq-ctl's OS user); or ""
-- The operation in one HMGET, each field into the local op_<field>: the names below in the
-- order of the fields asked (tests/unit/test_store_contract.c checks it).
local op_state, op_worker, op_kind, op_instance_key, op_plan_id, op_parameters, op_context,
      op_maintenance_version, op_created_ms, op_binding_key, op_bindings_key, op_quota_taken,
      op_quota_keys, op_instance, op_binding, op_tenant, op_lease_until, op_history, op_waited,
      op_in_progress_key, op_started_ms, op_quotas_held, op_service_id, op_halted_by,
      op_deletion_protection, op_claims, op_steps, op_platform, op_prev_plan_id =
  unpack(redis.call('HMGET', key_op,
                    'state', 'worker', 'kind', 'instance_key', 'plan_id', 'parameters', 'context',
                    'maintenance_version', 'created_ms', 'binding_key', 'bindings_key',
                    'quota_taken', 'quota_keys', 'instance', 'binding', 'tenant', 'lease_until',
                    'history', 'waited', 'in_progress_key', 'started_ms', 'quotas_held',
                    'service_id', 'halted_by', 'deletion_protection', 'claims', 'steps',
                    'platform', 'prev_plan_id'))
local previous_release = begun_by_previous_release(op_service_id)
local now, retention = tonumber(arg_now), tonumber(arg_retention)
-- A creation halted by a delete (lib/halt.lua) ends failed whatever its step reports, once its
-- worker stopped it, its lease ran out, or nobody ran it.
local halted = op_state == 'halting'
if arg_mode == 'abandon' then
  if op_state ~= 'queued' and op_state ~= 'waiting' and not halted and
      not (op_state == 'running' and tonumber(op_lease_until or '0') < now) then
    return 0
  end
elseif arg_mode == 'operator' then
  if op_state ~= 'queued' and op_state ~= 'running' and op_state ~= 'waiting' and not halted then
    return 0
  end
elseif arg_mode == 'sync_limit' then
  if op_state ~= 'queued' and op_state ~= 'running' and op_state ~= 'waiting' then return 0 end
elseif arg_mode == 'halted' then
  if not halted or op_worker ~= arg_worker_id then return 0 end
elseif (op_state ~= 'running' and not halted) or op_worker ~= arg_worker_id then
  return 0
end
local ok = arg_succeeded == '1' and not halted
local description = arg_description
if halted then
  description = 'Halted: ' .. (op_binding and 'an unbind' or 'a deprovision') ..
                ' of it was accepted while it ran (operation ' .. (op_halted_by or '?') .. ').'
end
local op_id, prefix = arg_operation_id, arg_prefix
-- The begin scripts record a key only when it is not the plain one built here.
local inst = op_instance_key or (prefix .. 'instance:' .. op_instance)
local binding = op_binding_key or
                (op_binding and (prefix .. 'binding:' .. op_instance .. ':' .. op_binding))
local bindings_set = op_bindings_key or (prefix .. 'bindings:' .. op_instance)

local event = ok and 'succeeded' or 'failed'
if arg_mode == 'abandon' then event = 'abandoned' end
if arg_mode == 'operator' then event = 'failed_by_operator' end
if arg_mode == 'sync_limit' then event = 'failed_at_sync_limit' end
if halted then event = 'halted' end
local op_fields = {'state', ok and 'succeeded' or 'failed', 'description', description,
                   'finished_ms', now}
-- A worker's outcome of this release's operation is said by the fields just written
-- (lib/history.lua); the recovery loop's and an operator's are events of their own, and the
-- previous release's operations keep every event written.
if arg_mode ~= '' or previous_release or halted then
  op_fields[#op_fields + 1], op_fields[#op_fields + 2] = 'history',
      history_with(op_history, {ms = now, event = event, worker = op_worker,
                                description = description, by = op_halted_by},
                   {started_ms = op_started_ms, worker = op_worker})
end
if not ok and (op_kind == 'update' or op_kind == 'deprovision') then
  op_fields[#op_fields + 1], op_fields[#op_fields + 2] = 'instance_usable', arg_instance_usable
  if op_kind == 'update' then
    op_fields[#op_fields + 1], op_fields[#op_fields + 2] =
        'update_repeatable', arg_update_repeatable
  end
end
redis.call('HSET', key_op, unpack(op_fields))
-- Its end in the audit trail, once: a step run twice ends the operation once (the state checked
-- above).
event_add(prefix, arg_events_max, 'ended', 'kind', op_kind, 'operation', op_id,
          'instance', op_instance, 'binding', op_binding, 'plan', op_plan_id,
          'prev_plan', op_prev_plan_id,
          'platform', op_platform or 'default', 'tenant', op_tenant, 'outcome', event,
          'description', description, 'duration_ms', tostring(now - tonumber(op_created_ms or now)),
          'claims', op_claims, 'steps', op_steps, 'worker', op_worker,
          'by', arg_mode == 'operator' and arg_by or nil)
-- What only an unfinished operation needs goes (the job, its step's state, its lease).
redis.call('HDEL', key_op, 'job', 'lease_until', 'resume', 'due_ms', 'tenant', 'waited',
           'quotas_held')
redis.call('EXPIRE', key_op, retention)
-- The tenant's count of operations in progress (OSBQ_POLICY in_progress_per_tenant), where the
-- begin script counted it; once: the state checked above is final from here on.
if op_in_progress_key and tonumber(redis.call('DECR', op_in_progress_key)) <= 0 then
  redis.call('DEL', op_in_progress_key)
end
redis.call('ZREM', key_queue, op_id)
-- Ended while waiting (an operator, or the recovery loop giving up): out of its tenant's polls.
if op_state == 'waiting' and op_tenant and op_tenant ~= '' then
  redis.call('ZREM', prefix .. 'polls:' .. op_tenant, op_id)
end

-- What its record becomes in the live records' count (lib/record_counts.lua), where it moves:
-- its state, or an update's plan and version (nil: unchanged). A failed delete or update
-- changes nothing there.
local count_state, count_plan, count_version, count_moves = nil, nil, nil, true
if halted then
  count_state = 'failed'
elseif binding then
  if op_kind == 'bind' then
    count_state = ok and 'bound' or 'failed'
  elseif op_kind == 'unbind' and ok then
    count_state = 'gone'
  else
    count_moves = false
  end
elseif op_kind == 'provision' then
  count_state = ok and 'provisioned' or 'failed'
elseif op_kind == 'update' and ok and (op_prev_plan_id or op_maintenance_version or
                                       previous_release) then
  -- Its line moves only with its plan (begin_instance.lua records the previous one when it
  -- changes) or its maintenance version: an update of parameters alone reads nothing here.
  count_plan, count_version = op_plan_id, op_maintenance_version
elseif op_kind == 'deprovision' and ok then
  count_state = 'gone'
else
  count_moves = false
end
local record_key = binding or inst
local count_mark = nil
if count_moves then
  count_mark = record_counts_move(prefix .. 'record_counts', record_key, binding and 'b' or 'i',
                                  false, count_state, count_plan, count_version)
end
if binding then
  -- Binding operations hold the instance shared and their binding exclusively.
  if tonumber(redis.call('HINCRBY', inst, 'lock_s', -1)) <= 0 then
    redis.call('HDEL', inst, 'lock_s')
  end
  if halted then
    -- The unbind that halted it holds the binding now: no credentials, its lock stays.
    redis.call('HSET', binding, 'state', 'failed')
  elseif op_kind == 'bind' then
    if ok and arg_binding ~= '' then
      redis.call('HSET', binding, 'state', 'bound', 'result', arg_binding)
    else
      redis.call('HSET', binding, 'state', ok and 'bound' or 'failed')
    end
    redis.call('HDEL', binding, 'lock_x')
  elseif op_kind == 'unbind' and ok then
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
  -- The deprovision that halted it holds the instance, and gives its quotas back.
  if halted then set, del = {'state', 'failed'}, {} end
  if ok then
    if arg_dashboard_url ~= '' then
      set[#set + 1], set[#set + 2] = 'dashboard_url', arg_dashboard_url
    end
    if arg_metadata ~= '' then
      set[#set + 1], set[#set + 2] = 'metadata', arg_metadata
    end
  end
  if halted then
    -- Its state only (above): the deprovision finishes the rest.
  elseif op_kind == 'provision' then
    set[#set + 1], set[#set + 2] = 'state', ok and 'provisioned' or 'failed'
    if not ok then
      quota_release(redis.call('HGET', inst, 'quota_keys'), {})
      del[#del + 1] = 'quota_keys'
    end
  elseif op_kind == 'update' and not ok then
    quota_release(op_quota_taken, {})
  elseif op_kind == 'update' and ok then
    if op_quota_keys then
      -- The plan changed: the instance now holds the new plan's quotas and no others.
      local keep = {}
      for key in string.gmatch(op_quota_keys, '[^\n]+') do keep[key] = true end
      quota_release(redis.call('HGET', inst, 'quota_keys'), keep)
      if op_quota_keys ~= '' then
        set[#set + 1], set[#set + 2] = 'quota_keys', op_quota_keys
      else
        del[#del + 1] = 'quota_keys'
      end
    end
    -- What the update changes (its operation records only what the request set).
    local function apply(name, value)
      if value then set[#set + 1], set[#set + 2] = name, value end
    end
    apply('plan_id', op_plan_id)
    apply('parameters', op_parameters)
    apply('context', op_context)
    apply('maintenance_version', op_maintenance_version)
    apply('deletion_protection', op_deletion_protection)
  elseif op_kind == 'deprovision' and ok then
    -- begin_instance.lua copied the instance's quotas to the operation (no field: it holds
    -- none); the previous release's operations did not.
    local held = op_quotas_held
    if previous_release then held = redis.call('HGET', inst, 'quota_keys') end
    quota_release(held, {})
    del[#del + 1] = 'quota_keys'
    set[#set + 1], set[#set + 2] = 'state', 'gone'
    redis.call('EXPIRE', inst, retention)
    -- Bindings the platform did not delete first go with their instance (docs/decisions/0004);
    -- most platforms do, and an empty set is no key: nothing to delete then.
    local left = redis.call('SMEMBERS', bindings_set)
    for _, bkey in ipairs(left) do binding_gone(prefix, bkey, retention, {'state', 'gone'}) end
    if #left > 0 then redis.call('DEL', bindings_set) end
  end
  if #set > 0 then redis.call('HSET', inst, unpack(set)) end
  if #del > 0 then redis.call('HDEL', inst, unpack(del)) end
end
record_counts_mark(record_key, count_mark)

-- The delete that halted it (lib/halt.lua) waits for this end: due now.
if halted and op_halted_by then
  local deleting_key = prefix .. 'op:' .. op_halted_by
  local deleting = read_fields(deleting_key, {'state', 'after', 'tenant'})
  if deleting.state == 'waiting' and deleting.after == op_id then
    redis.call('HSET', deleting_key, 'due_ms', now)
    queue_after_halt(prefix, key_queue, op_halted_by, deleting.tenant or '', now)
  end
end

-- Average duration per plan and kind (exponentially weighted), for adaptive Retry-After:
-- sampled, one operation in eight (by its id's last byte), which is plenty for an average and
-- saves its read and write on the others.
if not halted and string.byte(op_id, -1) % 8 == 0 then
  local took = now - tonumber(op_created_ms or now)
  local stats = prefix .. 'stats:' .. op_plan_id
  local avg = tonumber(redis.call('HGET', stats, op_kind) or '-1')
  if avg < 0 then avg = took else avg = math.floor(avg * 0.8 + took * 0.2) end
  redis.call('HSET', stats, op_kind, avg)
end

-- Synchronous waiters: the gateway that waits ('waited', its id), or several in the waiters set
-- ('waited' is '*'); an operation of the previous release keeps them in the set.
local gateways = {}
if op_waited == '*' or previous_release then
  gateways = redis.call('SMEMBERS', key_waiters)
  if #gateways > 0 then redis.call('DEL', key_waiters) end
elseif op_waited then
  gateways = {op_waited}
end
if #gateways > 0 then
  local outcome = cjson.encode({operation = op_id, state = ok and 'succeeded' or 'failed',
                                description = description, dashboard_url = arg_dashboard_url,
                                metadata = arg_metadata,
                                instance_usable = arg_instance_usable == '1',
                                update_repeatable = arg_update_repeatable == '1'})
  for _, gw in ipairs(gateways) do
    redis.call('PUBLISH', prefix .. 'events:' .. gw, outcome)
  end
end
return halted and 2 or 1
